//! Deciding a judgment: one judge's verdict, or a jury's under its rule. A juror's
//! error is an abstention; too many abstentions are the judgment's error. A judge that
//! cannot decide, a split under `unanimous`, and a judge whose calibration does not
//! meet its bar (under `require_calibrated_judges`) make the verdict inconclusive,
//! never a pass.

use crate::case::JuryRule;
use crate::check::judge::{JudgeRequest, JudgeVerdict};
use crate::errors::StepError;
use crate::record::{Judgment, JurorVote};
use crate::util::BoxFuture;

/// Runs judgments for the assertions of one case. The engine provides one that knows
/// the case's model calls, the configured agents and `[judges]`.
pub trait Judges: Send + Sync {
    /// The jurors `choice` names (`[run] judge` when it names none), each resolved, with
    /// the rule that makes their verdicts one. `model`: the assertion's own settings for
    /// the built-in judge.
    fn panel<'a>(
        &'a self,
        choice: &'a crate::case::JudgeChoice,
        model: &'a crate::case::ModelSettings,
    ) -> BoxFuture<'a, Result<Panel, StepError>>;

    /// One juror's verdict.
    fn judge<'a>(
        &'a self,
        juror: &'a Juror,
        request: &'a JudgeRequest,
    ) -> BoxFuture<'a, Result<JudgeVerdict, StepError>>;
}

/// How the run reaches a juror.
#[derive(Debug, Clone, PartialEq)]
pub enum JurorKind {
    /// The built-in judge with these model settings.
    Builtin(crate::case::ModelSettings),
    /// An agent playing the validator.
    Agent(String),
}

/// One juror, resolved by the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Juror {
    /// As the record names it: `llm`, `agents:NAME`, `judges:NAME`.
    pub label: String,
    /// How it is reached.
    pub kind: JurorKind,
    /// Why its verdict does not count: `require_calibrated_judges` is on and its current
    /// fingerprint has no calibration meeting its bar.
    pub uncalibrated: Option<String>,
}

/// Who judges one judgment: one juror, or a jury with its rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// The jury's name (`judges:panel`, or `jury` for an inline one); `None` for a
    /// single judge.
    pub jury: Option<String>,
    /// The jurors; one for a single judge.
    pub jurors: Vec<Juror>,
    /// How the jurors' verdicts make one.
    pub rule: JuryRule,
    /// The most abstentions the verdict survives.
    pub max_abstentions: usize,
    /// Why the jury's verdict does not count: a `[judges.NAME]` jury with a bar that
    /// its current fingerprint does not meet (under `require_calibrated_judges`).
    pub uncalibrated: Option<String>,
}

/// A judgment's outcome: the verdict (`None`: inconclusive) and what the record keeps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    /// Whether the reply meets the criteria; `None` when it cannot be told.
    pub passed: Option<bool>,
    /// What the record keeps: reasons, scores, every juror's vote.
    pub judgment: Judgment,
}

/// A judgment that could not be made: the error, and for a jury every juror's vote
/// (kept in the record even so).
#[derive(Debug)]
pub(crate) struct Undecided {
    pub(crate) error: StepError,
    pub(crate) judgment: Option<Box<Judgment>>,
}

impl From<StepError> for Undecided {
    fn from(error: StepError) -> Undecided {
        Undecided {
            error,
            judgment: None,
        }
    }
}

/// Asks `panel`'s jurors, one after another (so cassettes replay in order), and
/// decides.
pub(crate) async fn decide(
    judges: &dyn Judges,
    panel: &Panel,
    request: &JudgeRequest,
) -> Result<Decision, Undecided> {
    let mut votes = Vec::with_capacity(panel.jurors.len());
    for juror in &panel.jurors {
        votes.push(judges.judge(juror, request).await);
    }
    combine(panel, votes)
}

/// Decides from the jurors' answers, in `panel.jurors` order.
pub(crate) fn combine(
    panel: &Panel,
    votes: Vec<Result<JudgeVerdict, StepError>>,
) -> Result<Decision, Undecided> {
    if panel.jury.is_none() {
        let (juror, vote) = panel.jurors.iter().zip(votes).next().ok_or_else(|| {
            StepError::Broken("a judgment with no judge; this is a bug in agentest".into())
        })?;
        return Ok(single(juror, vote?));
    }
    let jury = panel.jury.as_deref().unwrap_or("jury");
    let mut records = Vec::with_capacity(votes.len());
    let mut abstained: Vec<(String, StepError)> = Vec::new();
    for (juror, vote) in panel.jurors.iter().zip(votes) {
        records.push(match vote {
            Ok(v) => JurorVote {
                judge: juror.label.clone(),
                passed: v.passed.filter(|_| juror.uncalibrated.is_none()),
                score: v.score,
                reason: v.reason,
                error: None,
                uncalibrated: juror.uncalibrated.clone(),
            },
            Err(e) => {
                let vote = JurorVote {
                    judge: juror.label.clone(),
                    error: Some(e.to_string()),
                    ..JurorVote::default()
                };
                abstained.push((juror.label.clone(), e));
                vote
            }
        });
    }
    if abstained.len() > panel.max_abstentions {
        let why: Vec<String> = abstained.iter().map(|(j, e)| format!("{j}: {e}")).collect();
        let message = format!(
            "{jury}: {} of {} jurors could not answer (at most {} may): {}",
            abstained.len(),
            panel.jurors.len(),
            panel.max_abstentions,
            why.join("; ")
        );
        // A jury nobody could reach is unavailable, and one whose jurors' endpoints all
        // failed is infrastructure's, as its one judge's would be.
        let all = |kind: fn(&StepError) -> bool| abstained.iter().all(|(_, e)| kind(e));
        let error = if all(|e| matches!(e, StepError::Unavailable(_))) {
            StepError::Unavailable(message.clone())
        } else if all(|e| matches!(e, StepError::Infrastructure(_))) {
            StepError::Infrastructure(message.clone())
        } else {
            StepError::Broken(message.clone())
        };
        return Err(Undecided {
            error,
            judgment: Some(Box::new(Judgment {
                reason: message,
                judge: Some(jury.to_string()),
                rule: Some(panel.rule.label()),
                jurors: records,
                ..Judgment::default()
            })),
        });
    }
    let passes = records.iter().filter(|v| v.passed == Some(true)).count();
    let fails = records.iter().filter(|v| v.passed == Some(false)).count();
    let undecided = records
        .iter()
        .filter(|v| v.passed.is_none() && v.error.is_none())
        .count();
    let decided: Vec<f64> = records
        .iter()
        .filter_map(|v| {
            v.passed
                .map(|p| v.score.unwrap_or(if p { 1.0 } else { 0.0 }))
        })
        .collect();
    let mean = (!decided.is_empty()).then(|| decided.iter().sum::<f64>() / decided.len() as f64);
    let passed = match panel.rule {
        JuryRule::Majority if passes > fails => Some(true),
        JuryRule::Majority if fails > passes => Some(false),
        JuryRule::Majority => None,
        JuryRule::Unanimous if undecided == 0 && fails == 0 && passes > 0 => Some(true),
        JuryRule::Unanimous if undecided == 0 && passes == 0 && fails > 0 => Some(false),
        JuryRule::Unanimous => None,
        JuryRule::MeanScore { threshold } => mean.map(|m| m >= threshold),
    };
    let mut tally = format!("{passes} pass, {fails} fail");
    if undecided > 0 {
        tally.push_str(&format!(", {undecided} undecided"));
    }
    if !abstained.is_empty() {
        tally.push_str(&format!(", {} abstained", abstained.len()));
    }
    if let (JuryRule::MeanScore { .. }, Some(m)) = (panel.rule, mean) {
        tally.push_str(&format!("; mean score {}", round(m)));
    }
    let outcome = match (passed, panel.rule) {
        (Some(true), _) => "pass".to_string(),
        (Some(false), _) => "fail".to_string(),
        (None, JuryRule::Unanimous) if passes > 0 && fails > 0 => {
            "inconclusive: the jury split".into()
        }
        (None, JuryRule::Majority) if passes > 0 && passes == fails => "inconclusive: a tie".into(),
        (None, _) => "inconclusive: no juror decided".into(),
    };
    let reason = format!("{jury} ({}): {tally}: {outcome}", panel.rule.label());
    Ok(Decision {
        passed: passed.filter(|_| panel.uncalibrated.is_none()),
        judgment: Judgment {
            reason,
            // The rule's own measure; under the other rules each juror's score is kept.
            score: mean
                .filter(|_| matches!(panel.rule, JuryRule::MeanScore { .. }))
                .map(round),
            suggestions: Vec::new(),
            judge: Some(jury.to_string()),
            rule: Some(panel.rule.label()),
            jurors: records,
            uncalibrated: panel.uncalibrated.clone(),
        },
    })
}

/// A single judge's verdict, inconclusive when its calibration does not meet its bar.
fn single(juror: &Juror, v: JudgeVerdict) -> Decision {
    let passed = v.passed.filter(|_| juror.uncalibrated.is_none());
    Decision {
        passed,
        judgment: Judgment {
            reason: v.reason,
            score: v.score,
            suggestions: v.suggestions,
            judge: Some(juror.label.clone()),
            rule: None,
            jurors: Vec::new(),
            uncalibrated: juror.uncalibrated.clone(),
        },
    }
}

/// Four decimals: a mean of scores for people to read.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn juror(label: &str) -> Juror {
        Juror {
            label: label.into(),
            kind: JurorKind::Agent(label.into()),
            uncalibrated: None,
        }
    }

    fn panel(rule: JuryRule, n: usize, max_abstentions: usize) -> Panel {
        Panel {
            jury: Some("judges:panel".into()),
            jurors: (0..n).map(|i| juror(&format!("agents:j{i}"))).collect(),
            rule,
            max_abstentions,
            uncalibrated: None,
        }
    }

    fn v(passed: Option<bool>, score: Option<f64>) -> Result<JudgeVerdict, StepError> {
        Ok(JudgeVerdict {
            passed,
            score,
            reason: format!("said {passed:?}"),
            suggestions: Vec::new(),
        })
    }

    fn broken() -> Result<JudgeVerdict, StepError> {
        Err(StepError::Broken("the answer is not JSON: \"hmm\"".into()))
    }

    #[test]
    fn majority_counts_votes_and_a_tie_is_inconclusive() {
        let p = panel(JuryRule::Majority, 3, 1);
        let d = combine(
            &p,
            vec![
                v(Some(true), None),
                v(Some(false), None),
                v(Some(true), None),
            ],
        )
        .unwrap();
        assert_eq!(d.passed, Some(true));
        assert_eq!(
            d.judgment.reason,
            "judges:panel (majority): 2 pass, 1 fail: pass"
        );
        assert_eq!(d.judgment.jurors.len(), 3);
        assert_eq!(d.judgment.jurors[1].passed, Some(false));
        assert_eq!(d.judgment.jurors[1].reason, "said Some(false)");
        // The erroring juror abstains; the other two tie.
        let d = combine(
            &p,
            vec![v(Some(true), None), broken(), v(Some(false), None)],
        )
        .unwrap();
        assert_eq!(d.passed, None);
        assert_eq!(
            d.judgment.reason,
            "judges:panel (majority): 1 pass, 1 fail, 1 abstained: inconclusive: a tie"
        );
        assert_eq!(
            d.judgment.jurors[1].error.as_deref(),
            Some("the answer is not JSON: \"hmm\"")
        );
    }

    #[test]
    fn unanimous_passes_only_when_all_agree_and_a_split_is_inconclusive() {
        let p = panel(JuryRule::Unanimous, 3, 1);
        let all = combine(&p, vec![v(Some(true), None), v(Some(true), None), broken()]).unwrap();
        assert_eq!(all.passed, Some(true), "{}", all.judgment.reason);
        let none = combine(&p, vec![v(Some(false), None); 3].into_iter().collect()).unwrap();
        assert_eq!(none.passed, Some(false));
        let split = combine(
            &p,
            vec![
                v(Some(true), None),
                v(Some(false), None),
                v(Some(true), None),
            ],
        )
        .unwrap();
        assert_eq!(split.passed, None);
        assert!(
            split
                .judgment
                .reason
                .ends_with("inconclusive: the jury split"),
            "{}",
            split.judgment.reason
        );
        let undecided = combine(
            &p,
            vec![v(Some(true), None), v(None, None), v(Some(true), None)],
        )
        .unwrap();
        assert_eq!(undecided.passed, None, "an undecided juror is no agreement");
    }

    #[test]
    fn too_many_abstentions_are_the_judgments_error() {
        let p = panel(JuryRule::Majority, 3, 1);
        let failed = combine(&p, vec![broken(), v(Some(true), None), broken()]).unwrap_err();
        let jurors = &failed.judgment.as_ref().expect("the votes kept").jurors;
        assert_eq!(jurors.len(), 3);
        assert_eq!(jurors[1].passed, Some(true));
        let e = failed.error;
        assert!(matches!(e, StepError::Broken(_)));
        assert_eq!(
            e.to_string(),
            "judges:panel: 2 of 3 jurors could not answer (at most 1 may): agents:j0: the answer is not JSON: \"hmm\"; agents:j2: the answer is not JSON: \"hmm\""
        );
        let away = || Err(StepError::Unavailable("no recording".into()));
        let e = combine(&p, vec![away(), away(), v(Some(true), None)])
            .unwrap_err()
            .error;
        assert!(matches!(e, StepError::Unavailable(_)), "{e}");
    }

    #[test]
    fn mean_score_weighs_the_deciding_jurors() {
        let p = panel(JuryRule::MeanScore { threshold: 0.7 }, 3, 0);
        let d = combine(
            &p,
            vec![
                v(Some(true), Some(0.9)),
                v(Some(false), Some(0.4)),
                v(Some(true), None),
            ],
        )
        .unwrap();
        // (0.9 + 0.4 + 1.0) / 3 = 0.7667
        assert_eq!(d.passed, Some(true));
        assert_eq!(d.judgment.score, Some(0.7667));
        let d = combine(
            &p,
            vec![
                v(Some(true), Some(0.9)),
                v(Some(false), None),
                v(None, Some(1.0)),
            ],
        )
        .unwrap();
        // The undecided juror's score does not count: (0.9 + 0) / 2.
        assert_eq!(d.passed, Some(false));
        assert_eq!(d.judgment.score, Some(0.45));
    }

    #[test]
    fn an_uncalibrated_judges_verdict_is_kept_but_does_not_count() {
        let mut jury = panel(JuryRule::Majority, 3, 1);
        jury.uncalibrated = Some("κ 0.2 < min_kappa 0.6".into());
        let d = combine(&jury, vec![v(Some(true), None); 3].into_iter().collect()).unwrap();
        assert_eq!(d.passed, None, "a jury short of its bar does not decide");
        assert_eq!(
            d.judgment.uncalibrated.as_deref(),
            Some("κ 0.2 < min_kappa 0.6")
        );
        let mut p = panel(JuryRule::Majority, 1, 0);
        p.jury = None;
        p.jurors[0].uncalibrated = Some("no calibration of this fingerprint".into());
        let d = combine(&p, vec![v(Some(true), Some(1.0))]).unwrap();
        assert_eq!(d.passed, None);
        assert_eq!(d.judgment.reason, "said Some(true)");
        assert_eq!(
            d.judgment.uncalibrated.as_deref(),
            Some("no calibration of this fingerprint")
        );
        // A single judge's error is the judgment's error, as it always was.
        assert!(combine(&p, vec![broken()]).is_err());
    }
}
