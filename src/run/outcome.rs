//! How a case ends: the reason a step stopped it, and the records of cases that did not
//! run to the end (a line that did not load, a skipped case).

use crate::case::Case;
use crate::errors::StepError;
use crate::record::{CaseReport, Status};
use crate::settings::on_ci;
use crate::source::{CaseError, Loaded, SEPARATOR};

/// The status a case ends with when `e` stops it: the one mapping from errors to
/// statuses. `on_ci`: a model that cannot be reached must fail a CI run rather than be
/// skipped.
pub(crate) fn status_of(e: &StepError, on_ci: bool) -> Status {
    match e {
        StepError::Broken(_) => Status::Error,
        StepError::Failed(_) => Status::Failed,
        StepError::Unavailable(_) if on_ci => Status::Failed,
        StepError::Unavailable(_) => Status::Skipped,
        StepError::Infrastructure(_) => Status::Error,
    }
}

/// Who stopped a conversation, for its `termination` (`simulator_error` or `agent_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Party {
    /// The agent under test, or anything else of the case (hooks, checks, a person).
    Agent,
    /// The simulated user.
    Simulator,
}

/// Why a case stopped early: the status it ends with, the reason, and who caused it.
#[derive(Debug)]
pub(crate) struct Stop {
    pub(crate) status: Status,
    pub(crate) message: String,
    pub(crate) by: Party,
    /// What carries the conversation failed (see [`StepError::Infrastructure`]).
    pub(crate) infrastructure: bool,
}

impl Stop {
    /// A step's error, with the status its kind calls for, and `at` (`turn 2`, `final
    /// assertions`) before its message.
    pub(crate) fn step(at: &str, e: StepError) -> Stop {
        Stop {
            status: status_of(&e, on_ci()),
            infrastructure: matches!(e, StepError::Infrastructure(_)),
            message: format!("{at}: {e}"),
            by: Party::Agent,
        }
    }

    /// A case `error` with this message.
    pub(crate) fn error(message: impl Into<String>) -> Stop {
        Stop {
            status: Status::Error,
            message: message.into(),
            by: Party::Agent,
            infrastructure: false,
        }
    }

    /// The same stop, caused by `by`.
    pub(crate) fn by(self, by: Party) -> Stop {
        Stop { by, ..self }
    }

    /// Whose fault the stop is, when the stop itself shows it: infrastructure that
    /// failed, or the simulated user. `None`: decided from the record
    /// ([`crate::check::blame`]).
    pub(crate) fn blame(&self) -> Option<crate::record::Blame> {
        let party = if self.infrastructure {
            crate::record::Party::Infrastructure
        } else if self.by == Party::Simulator {
            crate::record::Party::Simulator
        } else {
            return None;
        };
        Some(crate::record::Blame {
            party,
            evidence: self.message.clone(),
        })
    }
}

impl From<StepError> for Stop {
    fn from(e: StepError) -> Stop {
        Stop {
            status: status_of(&e, on_ci()),
            infrastructure: matches!(e, StepError::Infrastructure(_)),
            message: e.to_string(),
            by: Party::Agent,
        }
    }
}

/// Ends the case with `status` and `message`.
pub(crate) fn fail(report: &mut CaseReport, status: Status, message: String) {
    report.status = status;
    report.error = Some(message);
}

/// Adds `message` to the case's error without changing a status that is not a pass (an
/// `after` hook or a cassette failing after the case already failed).
pub(crate) fn add_error(report: &mut CaseReport, message: String) {
    if report.status == Status::Passed {
        fail(report, Status::Error, message);
    } else if report.status == Status::Inconclusive {
        // No failure either: the broken hook or cassette is its error, and why it was
        // inconclusive stays said.
        let prev = report.error.take().unwrap_or_default();
        fail(
            report,
            Status::Error,
            format!("{prev}\n{message}").trim().to_string(),
        );
    } else {
        let prev = report.error.take().unwrap_or_default();
        report.error = Some(format!("{prev}\n{message}").trim().to_string());
    }
}

/// A fresh record for a case, status `passed` until something says otherwise.
pub(crate) fn new_report(loaded: &Loaded, case: &Case) -> CaseReport {
    CaseReport {
        id: case.id.clone(),
        name: case.display_name().to_string(),
        suite: loaded.suite.clone(),
        trial: loaded.trial.clone(),
        status: Status::Passed,
        mode: Some(case.mode.name().into()),
        agent: None,
        turns: Vec::new(),
        location: case.location.to_string(),
        tags: case.tags.clone(),
        parameters: match &case.mode {
            crate::case::Mode::Scenario(sc) => sc.parameters.iter().cloned().collect(),
            _ => serde_json::Map::new(),
        },
        input_hash: Some(input_hash(case, "")),
        note: note_of(loaded),
        evalstudio: case.evalstudio().map(|e| crate::record::EvalStudioIds {
            eval_id: e.eval_id.clone(),
            scenario_id: e.scenario_id.clone(),
            persona_id: e.persona_id.clone(),
            connector_id: e.connector_id.clone(),
        }),
        ..CaseReport::default()
    }
}

/// What planning changed about the case, for its record.
fn note_of(loaded: &Loaded) -> Option<String> {
    match &loaded.generation {
        Some(crate::source::Generation::Renamed(note)) => Some(note.clone()),
        _ => None,
    }
}

/// The case's fingerprint (its record's `input_hash`): its definition as written, the
/// trial it is (its id and persona), the persona's own text when the case carries it,
/// and `setting`, what else decides its verdict (see [`crate::run::engine::Engine::input_hash`];
/// empty for a record made without an engine). `--resume` keeps an ended run only while
/// its case's fingerprint is unchanged, and `runs flaky` compares runs that share one.
pub(crate) fn input_hash(case: &Case, setting: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(case.raw.to_string().as_bytes());
    h.update(case.trial_id().as_bytes());
    if let Some(p) = &case.persona {
        for part in [&p.description, &p.system_prompt] {
            h.update([0]);
            h.update(part.as_deref().unwrap_or_default().as_bytes());
        }
    }
    if !setting.is_empty() {
        h.update([0]);
        h.update(setting.as_bytes());
    }
    let digest = h.finalize();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The record of a case that was not run: a load error, or `skipped` with `reason`.
pub(crate) fn not_run(loaded: &Loaded, reason: String) -> CaseReport {
    match &loaded.entry {
        Ok(case) => CaseReport {
            status: Status::Skipped,
            error: Some(reason),
            ..new_report(loaded, case)
        },
        Err(e) => broken(loaded, e),
    }
}

/// The record of a line that did not load.
pub(crate) fn broken(loaded: &Loaded, e: &CaseError) -> CaseReport {
    // Without a usable id, the trial's own name (`line-N`) stands in for it.
    let id = e.id.clone().unwrap_or_else(|| {
        let tail = loaded.trial.rsplit(SEPARATOR).next();
        tail.unwrap_or_default().to_string()
    });
    CaseReport {
        name: id.clone(),
        id,
        suite: loaded.suite.clone(),
        trial: loaded.trial.clone(),
        status: Status::Error,
        mode: None,
        agent: None,
        turns: Vec::new(),
        error: Some(e.to_string()),
        location: e.location.to_string(),
        note: note_of(loaded),
        ..CaseReport::default()
    }
}

/// Why a case is not run: `skip: true`.
pub(crate) fn skip_reason(case: &Case) -> Option<String> {
    case.skip.then(|| "skip: true in the case".to_string())
}

/// The simulator failed at `at` (`turn 3`): a model that cannot be reached reads as for
/// the agent's own calls (skipped off CI); anything else is a simulator error.
pub(crate) fn simulator_stop(at: &str, e: StepError) -> Stop {
    let what = match e {
        StepError::Unavailable(_) => at.to_string(),
        _ => format!("{at}: simulator error"),
    };
    Stop::step(&what, e).by(Party::Simulator)
}
