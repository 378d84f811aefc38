//! Who judges: one judge or a jury, as a case or `[judges.NAME]` names it.

use std::fmt;

/// One judge, as written in `use` or a jury's list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JudgeRef {
    /// `llm`: the built-in judge on `[llm]` (or the endpoint its settings name).
    Builtin,
    /// `agents:NAME`: an agent playing the validator.
    Agent(String),
    /// `judges:NAME`: a judge or jury defined in `[judges.NAME]`.
    Named(String),
}

impl JudgeRef {
    /// Reads `llm`, `agents:NAME` or `judges:NAME`; `Err` says what was expected.
    pub fn parse(s: &str) -> Result<JudgeRef, String> {
        let name = |rest: &str| (!rest.trim().is_empty()).then(|| rest.to_string());
        if s == "llm" {
            return Ok(JudgeRef::Builtin);
        }
        if let Some(n) = s.strip_prefix("agents:").and_then(name) {
            return Ok(JudgeRef::Agent(n));
        }
        if let Some(n) = s.strip_prefix("judges:").and_then(name) {
            return Ok(JudgeRef::Named(n));
        }
        Err(format!(
            "expected \"llm\" (the built-in judge), \"agents:NAME\" (an agent as judge) or \"judges:NAME\" (a [judges.NAME] table), found \"{s}\""
        ))
    }
}

impl fmt::Display for JudgeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JudgeRef::Builtin => f.write_str("llm"),
            JudgeRef::Agent(n) => write!(f, "agents:{n}"),
            JudgeRef::Named(n) => write!(f, "judges:{n}"),
        }
    }
}

/// How a jury's verdicts make one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JuryRule {
    /// More jurors pass than fail (a tie is inconclusive).
    Majority,
    /// Every juror that answers agrees; a split is inconclusive.
    Unanimous,
    /// The mean score of the jurors that decide is at least `threshold` (a juror
    /// without a score counts 1 for a pass, 0 for a fail).
    MeanScore {
        /// From 0 to 1.
        threshold: f64,
    },
}

impl JuryRule {
    /// Reads `rule` (default `majority`) and `threshold` (only, and required, with
    /// `mean_score`); `Err` says what is wrong and the fix.
    pub fn parse(rule: Option<&str>, threshold: Option<f64>) -> Result<JuryRule, String> {
        let rule = match rule.unwrap_or("majority") {
            "majority" => JuryRule::Majority,
            "unanimous" => JuryRule::Unanimous,
            "mean_score" => match threshold {
                Some(t) if (0.0..=1.0).contains(&t) => JuryRule::MeanScore { threshold: t },
                Some(t) => return Err(format!("`threshold` {t} is not between 0 and 1")),
                None => {
                    return Err(
                        "`rule = \"mean_score\"` needs a `threshold` from 0 to 1, like 0.7".into(),
                    )
                }
            },
            other => {
                return Err(format!(
                "`rule` must be \"majority\", \"unanimous\" or \"mean_score\", found \"{other}\""
            ))
            }
        };
        if threshold.is_some() && !matches!(rule, JuryRule::MeanScore { .. }) {
            return Err("`threshold` applies only to `rule = \"mean_score\"`; remove it".into());
        }
        Ok(rule)
    }

    /// The rule as written (`majority`, `unanimous`, `mean_score >= 0.7`).
    pub fn label(&self) -> String {
        match self {
            JuryRule::Majority => "majority".into(),
            JuryRule::Unanimous => "unanimous".into(),
            JuryRule::MeanScore { threshold } => format!("mean_score >= {threshold}"),
        }
    }
}

/// Who judges a judgment: the judges named (none: the run's default judge), and how
/// a jury of several decides.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeChoice {
    /// The judges `use` names, in order; empty for the default judge.
    pub judges: Vec<JudgeRef>,
    /// The rule of an inline jury (`use` with several judges).
    pub rule: JuryRule,
    /// The most jurors whose errors a verdict survives; `None`: fewer than half.
    pub max_abstentions: Option<usize>,
}

impl Default for JudgeChoice {
    fn default() -> Self {
        JudgeChoice {
            judges: Vec::new(),
            rule: JuryRule::Majority,
            max_abstentions: None,
        }
    }
}

impl JudgeChoice {
    /// The judge agent when the only judge is one.
    pub fn single_agent(&self) -> Option<&str> {
        match self.judges.as_slice() {
            [JudgeRef::Agent(a)] => Some(a),
            _ => None,
        }
    }
}

/// The most abstentions a jury of `n` survives by default: fewer than half of it, so
/// most jurors must answer.
pub(crate) fn default_max_abstentions(n: usize) -> usize {
    n.saturating_sub(1) / 2
}

/// What an inconclusive verdict does to its case: `[run] on_inconclusive`. The case's
/// record keeps the status `inconclusive` whatever the choice; this decides how the
/// trial, the exit code and JUnit read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnInconclusive {
    /// A failure, with its own message: CI's default, since nobody vouched for the reply.
    Fail,
    /// An error: the tooling, not the agent, needs attention (the default elsewhere).
    Error,
    /// Shown, counted apart, and neither a pass nor a failure (JUnit: skipped).
    Ignore,
}

impl OnInconclusive {
    /// Reads `fail`, `error` or `ignore`.
    pub fn parse(s: &str) -> Result<OnInconclusive, String> {
        match s {
            "fail" => Ok(OnInconclusive::Fail),
            "error" => Ok(OnInconclusive::Error),
            "ignore" => Ok(OnInconclusive::Ignore),
            other => Err(format!(
                "expected \"fail\", \"error\" or \"ignore\", found \"{other}\""
            )),
        }
    }

    /// The choice when the config makes none: `fail` on CI, `error` elsewhere.
    pub fn default_for(on_ci: bool) -> OnInconclusive {
        if on_ci {
            OnInconclusive::Fail
        } else {
            OnInconclusive::Error
        }
    }

    /// As written.
    pub fn name(self) -> &'static str {
        match self {
            OnInconclusive::Fail => "fail",
            OnInconclusive::Error => "error",
            OnInconclusive::Ignore => "ignore",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_and_rules_are_read_or_refused_with_the_fix() {
        assert_eq!(JudgeRef::parse("llm"), Ok(JudgeRef::Builtin));
        assert_eq!(
            JudgeRef::parse("agents:strict"),
            Ok(JudgeRef::Agent("strict".into()))
        );
        assert_eq!(
            JudgeRef::parse("judges:panel").unwrap().to_string(),
            "judges:panel"
        );
        assert!(JudgeRef::parse("agents:")
            .unwrap_err()
            .contains("found \"agents:\""));
        assert!(JudgeRef::parse("gpt-4")
            .unwrap_err()
            .contains("\"judges:NAME\""));
        assert_eq!(JuryRule::parse(None, None), Ok(JuryRule::Majority));
        assert_eq!(
            JuryRule::parse(Some("mean_score"), Some(0.7))
                .unwrap()
                .label(),
            "mean_score >= 0.7"
        );
        assert!(JuryRule::parse(Some("mean_score"), None)
            .unwrap_err()
            .contains("needs a `threshold`"));
        assert!(JuryRule::parse(Some("majority"), Some(0.5))
            .unwrap_err()
            .contains("only to"));
        assert!(JuryRule::parse(Some("most"), None)
            .unwrap_err()
            .contains("found \"most\""));
        assert_eq!(
            [1, 2, 3, 4, 5].map(default_max_abstentions),
            [0, 0, 1, 1, 2]
        );
    }
}
