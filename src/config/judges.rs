//! `[judges.NAME]`: a judge defined once (the built-in one with its model settings, or
//! an agent) or a jury of several, with the calibration bar it must meet; and the
//! `[run]` settings that choose the default judge and what an inconclusive verdict does.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::case::{JudgeChoice, JudgeRef, JuryRule, ModelSettings, OnInconclusive, Party};
use crate::errors::ConfigValueError;

/// `[judges.NAME]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// `"llm"` (the built-in judge, the default) or `"agents:NAME"`.
    #[serde(rename = "use")]
    pub use_: Option<String>,
    /// The built-in judge's endpoint, an `[llms.NAME]` (default: the judge's endpoint).
    pub llm: Option<String>,
    /// The model name sent instead of the endpoint's.
    pub model: Option<String>,
    /// The built-in judge's temperature, from 0 to 2.
    pub temperature: Option<f64>,
    /// The built-in judge's completion token limit.
    pub max_tokens: Option<u32>,
    /// A sampling seed, for endpoints that honour one.
    pub seed: Option<u64>,
    /// A jury: its judges (`"llm"`, `"agents:NAME"`, `"judges:NAME"` of a single judge).
    pub jury: Option<Vec<String>>,
    /// A jury's rule: `majority` (default), `unanimous` or `mean_score`.
    pub rule: Option<String>,
    /// `mean_score`'s bar, from 0 to 1.
    pub threshold: Option<f64>,
    /// The most jurors whose errors a verdict survives (default: fewer than half).
    pub max_abstentions: Option<usize>,
    /// The least Cohen's κ a calibration must show for the judge to count as calibrated.
    pub min_kappa: Option<f64>,
    /// The least accuracy a calibration must show.
    pub min_accuracy: Option<f64>,
}

/// A `[judges.NAME]` table, checked: one judge, or a jury.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeDef {
    /// The built-in judge with these model settings.
    Builtin(ModelSettings),
    /// An agent playing the validator.
    Agent(String),
    /// A jury: its judges (none of them a jury) and its rule.
    Jury(JudgeChoice),
}

/// A checked `[judges.NAME]`: what it is and the calibration bar it must meet.
#[derive(Debug, Clone, PartialEq)]
pub struct Judge {
    /// The judge or the jury.
    pub def: JudgeDef,
    /// `min_kappa`.
    pub min_kappa: Option<f64>,
    /// `min_accuracy`.
    pub min_accuracy: Option<f64>,
}

impl Judge {
    /// Whether a calibration bar is set.
    pub fn has_bar(&self) -> bool {
        self.min_kappa.is_some() || self.min_accuracy.is_some()
    }
}

impl JudgeConfig {
    /// Checks the table `[judges.NAME]`; `judges` are all the tables, for a jury's
    /// members, and `llms` the endpoints defined.
    pub(crate) fn check(
        &self,
        name: &str,
        judges: &BTreeMap<String, JudgeConfig>,
        has_llm: &dyn Fn(&str) -> bool,
    ) -> Result<Judge, ConfigValueError> {
        let table = format!("[judges.\"{name}\"]");
        let err = |key: &str, message: String| ConfigValueError::Judge {
            key: format!("{table}.{key}"),
            message,
        };
        let model = ModelSettings {
            llm: self.llm.clone(),
            model: self.model.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            seed: self.seed,
        };
        if let Some(t) = self.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Err(err("temperature", format!("expected 0 to 2, found {t}")));
        }
        if let Some(l) = self.llm.as_deref().filter(|l| !has_llm(l)) {
            return Err(err(
                "llm",
                format!("no [llms.\"{l}\"] table defines that endpoint; add one, or remove `llm` for the judge's default endpoint"),
            ));
        }
        for (key, bar, low) in [
            ("min_kappa", self.min_kappa, -1.0),
            ("min_accuracy", self.min_accuracy, 0.0),
        ] {
            if let Some(b) = bar.filter(|b| !(low..=1.0).contains(b)) {
                return Err(err(key, format!("expected {low} to 1, found {b}")));
            }
        }
        let def = match (&self.use_, &self.jury) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "jury",
                    "a table is one judge (`use`) or a jury (`jury`), not both; remove one".into(),
                ))
            }
            (_, None) => {
                for (key, set) in [
                    ("rule", self.rule.is_some()),
                    ("threshold", self.threshold.is_some()),
                    ("max_abstentions", self.max_abstentions.is_some()),
                ] {
                    if set {
                        return Err(err(
                            key,
                            format!(
                                "`{key}` applies to a jury; add `jury = [...]` or remove `{key}`"
                            ),
                        ));
                    }
                }
                match self.use_.as_deref().map(JudgeRef::parse).transpose() {
                    Err(why) => return Err(err("use", why)),
                    Ok(None | Some(JudgeRef::Builtin)) => JudgeDef::Builtin(model),
                    Ok(Some(JudgeRef::Agent(a))) => {
                        if !model.is_empty() {
                            return Err(err(
                                "use",
                                format!("`llm`, `model`, `temperature`, `max_tokens` and `seed` set the built-in judge's request, but the agent `{a}` judges here; remove them, or write `use = \"llm\"`"),
                            ));
                        }
                        JudgeDef::Agent(a)
                    }
                    Ok(Some(JudgeRef::Named(_))) => {
                        return Err(err(
                            "use",
                            "a judge is \"llm\" or \"agents:NAME\"; to gather several judges, write `jury = [\"judges:a\", \"agents:b\"]`".into(),
                        ))
                    }
                }
            }
            (None, Some(list)) => {
                if !model.is_empty() {
                    return Err(err(
                        "jury",
                        "model settings belong to the jury's judges, not the jury; define the built-in judge with them in a [judges.NAME] table and name it in `jury`".into(),
                    ));
                }
                if list.is_empty() {
                    return Err(err(
                        "jury",
                        "an empty jury judges nothing; name its judges".into(),
                    ));
                }
                let mut members = Vec::with_capacity(list.len());
                for (i, m) in list.iter().enumerate() {
                    let j = JudgeRef::parse(m).map_err(|why| err(&format!("jury[{i}]"), why))?;
                    if let JudgeRef::Named(n) = &j {
                        match judges.get(n) {
                            None => {
                                return Err(err(
                                    &format!("jury[{i}]"),
                                    format!("no [judges.\"{n}\"] table defines `{m}`; add one, or name `llm` or `agents:NAME`"),
                                ))
                            }
                            Some(t) if t.jury.is_some() => {
                                return Err(err(
                                    &format!("jury[{i}]"),
                                    format!("`{m}` is a jury; a juror is one judge, so list its judges here instead"),
                                ))
                            }
                            Some(_) => {}
                        }
                    }
                    if members.contains(&j) {
                        return Err(err(
                            &format!("jury[{i}]"),
                            format!("`{m}` is in the jury twice; a juror votes once"),
                        ));
                    }
                    members.push(j);
                }
                let rule =
                    JuryRule::parse(self.rule.as_deref(), self.threshold).map_err(|why| {
                        let key = if why.starts_with("`rule` must") {
                            "rule"
                        } else {
                            "threshold"
                        };
                        err(key, why)
                    })?;
                if let Some(m) = self.max_abstentions.filter(|m| *m >= members.len()) {
                    return Err(err(
                        "max_abstentions",
                        format!("{m} abstentions of a jury of {} would let a verdict stand with no juror answering; give at most {}", members.len(), members.len() - 1),
                    ));
                }
                JudgeDef::Jury(JudgeChoice {
                    judges: members,
                    rule,
                    max_abstentions: self.max_abstentions,
                })
            }
        };
        Ok(Judge {
            def,
            min_kappa: self.min_kappa,
            min_accuracy: self.min_accuracy,
        })
    }
}

/// `[run] on_inconclusive`, checked; `None` when unset.
pub(crate) fn on_inconclusive(
    written: Option<&str>,
) -> Result<Option<OnInconclusive>, ConfigValueError> {
    written
        .map(OnInconclusive::parse)
        .transpose()
        .map_err(|message| ConfigValueError::Judge {
            key: "[run].on_inconclusive".into(),
            message,
        })
}

/// `[run] rerun_on`, `max_reruns` and `max_simulator_blame`, checked: the parties
/// whose failures are run again.
pub(crate) fn rerun_on(
    rerun_on: Option<&[String]>,
    max_reruns: Option<u32>,
    max_simulator_blame: Option<f64>,
) -> Result<Vec<Party>, ConfigValueError> {
    let err = |key: &str, message: String| ConfigValueError::Judge {
        key: format!("[run].{key}"),
        message,
    };
    let mut parties = Vec::new();
    for (i, name) in rerun_on.into_iter().flatten().enumerate() {
        let p = Party::parse(name).map_err(|why| err(&format!("rerun_on[{i}]"), why))?;
        if p == Party::Agent {
            return Err(err(
                &format!("rerun_on[{i}]"),
                "running the agent's own failures again until one passes would hide them; rerun on \"simulator\", \"infrastructure\" or \"judge\"".into(),
            ));
        }
        if !parties.contains(&p) {
            parties.push(p);
        }
    }
    match max_reruns {
        Some(0) => {
            return Err(err(
                "max_reruns",
                "0 reruns runs nothing again; remove `rerun_on`, or give 1 or more".into(),
            ))
        }
        Some(n) if n > 10 => {
            return Err(err(
                "max_reruns",
                format!("{n} reruns of one case is a retry loop, not a rerun; give at most 10"),
            ))
        }
        Some(_) if parties.is_empty() => {
            return Err(err(
                "max_reruns",
                "it applies with `rerun_on`; add `rerun_on = [\"simulator\", \"infrastructure\"]`"
                    .into(),
            ))
        }
        _ => {}
    }
    if let Some(r) = max_simulator_blame.filter(|r| !(0.0..=1.0).contains(r)) {
        return Err(err(
            "max_simulator_blame",
            format!("expected a share from 0 to 1, like 0.1, found {r}"),
        ));
    }
    Ok(parties)
}

/// `[run] judge` (or `persona_judge`, as `key` says), checked against the `[judges]`
/// tables.
pub(crate) fn named_judge(
    key: &str,
    written: Option<&str>,
    judges: &BTreeMap<String, JudgeConfig>,
) -> Result<Option<JudgeRef>, ConfigValueError> {
    let Some(w) = written else {
        return Ok(None);
    };
    let err = |message: String| ConfigValueError::Judge {
        key: format!("[run].{key}"),
        message,
    };
    let j = JudgeRef::parse(w).map_err(err)?;
    if let JudgeRef::Named(n) = &j {
        if !judges.contains_key(n) {
            return Err(err(format!(
                "no [judges.\"{n}\"] table defines `{w}`; add one, or remove `{key}`"
            )));
        }
    }
    Ok(Some(j))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml_text: &str) -> BTreeMap<String, JudgeConfig> {
        toml::from_str(toml_text).unwrap()
    }

    fn check(all: &BTreeMap<String, JudgeConfig>, name: &str) -> Result<Judge, String> {
        all[name]
            .check(name, all, &|l| l == "big")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn judges_and_juries_are_checked_with_the_fix() {
        let all = table(
            r#"
            [strict]
            llm = "big"
            temperature = 0.0
            min_kappa = 0.6
            [agent]
            use = "agents:reviewer"
            [panel]
            jury = ["judges:strict", "judges:agent", "llm"]
            rule = "unanimous"
            max_abstentions = 1
            [nested]
            jury = ["judges:panel"]
            [bad_rule]
            jury = ["llm", "agents:x"]
            rule = "mean_score"
            [twice]
            jury = ["llm", "llm"]
            [lonely_rule]
            rule = "majority"
            [agent_with_model]
            use = "agents:x"
            model = "gpt"
            [no_llm]
            llm = "small"
            [kappa]
            min_kappa = 2.0
        "#,
        );
        let strict = check(&all, "strict").unwrap();
        assert!(strict.has_bar());
        assert!(matches!(&strict.def, JudgeDef::Builtin(m) if m.llm.as_deref() == Some("big")));
        assert_eq!(
            check(&all, "agent").unwrap().def,
            JudgeDef::Agent("reviewer".into())
        );
        let JudgeDef::Jury(panel) = check(&all, "panel").unwrap().def else {
            panic!("a jury")
        };
        assert_eq!(panel.rule, JuryRule::Unanimous);
        assert_eq!(panel.max_abstentions, Some(1));
        assert_eq!(panel.judges.len(), 3);
        let cases = [
            (
                "nested",
                "[judges.\"nested\"].jury[0]: `judges:panel` is a jury",
            ),
            (
                "bad_rule",
                "[judges.\"bad_rule\"].threshold: `rule = \"mean_score\"` needs a `threshold`",
            ),
            (
                "twice",
                "[judges.\"twice\"].jury[1]: `llm` is in the jury twice",
            ),
            (
                "lonely_rule",
                "[judges.\"lonely_rule\"].rule: `rule` applies to a jury",
            ),
            (
                "agent_with_model",
                "[judges.\"agent_with_model\"].use: `llm`, `model`",
            ),
            (
                "no_llm",
                "[judges.\"no_llm\"].llm: no [llms.\"small\"] table",
            ),
            (
                "kappa",
                "[judges.\"kappa\"].min_kappa: expected -1 to 1, found 2",
            ),
        ];
        for (name, want) in cases {
            let got = check(&all, name).unwrap_err();
            assert!(got.starts_with(want), "{name}: {got}");
        }
        assert_eq!(
            named_judge("judge", Some("judges:panel"), &all).unwrap(),
            Some(JudgeRef::Named("panel".into()))
        );
        assert!(named_judge("judge", Some("judges:nope"), &all)
            .unwrap_err()
            .to_string()
            .starts_with("[run].judge: no [judges.\"nope\"] table"));
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            rerun_on(
                Some(&s(&["simulator", "infrastructure", "simulator"])),
                Some(2),
                Some(0.1)
            )
            .unwrap(),
            [Party::Simulator, Party::Infrastructure]
        );
        for (list, max, share, want) in [
            (
                s(&["user"]),
                None,
                None,
                "[run].rerun_on[0]: expected \"agent\"",
            ),
            (
                s(&["agent"]),
                None,
                None,
                "[run].rerun_on[0]: running the agent's own failures again",
            ),
            (s(&["judge"]), Some(0), None, "[run].max_reruns: 0 reruns"),
            (s(&["judge"]), Some(11), None, "[run].max_reruns: 11 reruns"),
            (
                s(&[]),
                Some(2),
                None,
                "[run].max_reruns: it applies with `rerun_on`",
            ),
            (
                s(&[]),
                None,
                Some(1.5),
                "[run].max_simulator_blame: expected a share from 0 to 1",
            ),
        ] {
            let got = rerun_on(Some(&list), max, share).unwrap_err().to_string();
            assert!(got.starts_with(want), "{got}");
        }
        assert!(on_inconclusive(Some("pass"))
            .unwrap_err()
            .to_string()
            .contains("found \"pass\""));
    }
}
