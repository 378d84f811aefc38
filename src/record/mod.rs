//! Recording results: the report model, the sinks and formats that write it, the console,
//! golden transcripts and the commands that review, accept and freeze them.

pub(crate) mod console;
pub(crate) mod format;
pub(crate) mod freeze;
pub(crate) mod golden;
mod golden_check;
mod jsonl;
mod model;
mod recorder;
mod replace;
pub(crate) mod review;
mod sink;
mod stability;
pub(crate) mod store;
mod termination;

pub(crate) use crate::case::Party;
pub(crate) use format::failure_message;
pub use format::Format;
pub(crate) use jsonl::JsonlWriter;
pub(crate) use model::Blame;
pub use model::{rfc3339, CaseReport, RunInfo, Status, Summary};
pub(crate) use model::{
    AssertionReport, AwaitReason, CassetteStats, CheckpointReport, CodeRun, Cost,
    CriteriaEvaluation, Ending, EvalStudioIds, Judgment, JurorVote, ModelUse, RoleCost, RunResult,
    StepRef, TurnReport,
};
pub(crate) use recorder::{Recorder, StorePlan};
pub(crate) use replace::{is_report, only_over_a_report};
pub use sink::parse_jsonl;
pub(crate) use sink::{read_reports, ReportSink};
pub(crate) use stability::{DurationStats, Stability, StabilityClass};
pub(crate) use termination::Termination;

/// `report` with every registered secret (see [`crate::util::register_secret`]) masked
/// in every text it holds: a server that echoes an `Authorization` header in an error
/// body, an agent printing its API key on stderr. Every record passes here before it is
/// shown, pinned in a golden file, stored or written to a report.
pub(crate) fn without_secrets(report: CaseReport) -> CaseReport {
    if !crate::util::any_secret() {
        return report;
    }
    let Ok(mut value) = serde_json::to_value(&report) else {
        return report;
    };
    if !crate::util::scrub_json(&mut value) {
        return report;
    }
    match serde_json::from_value(value) {
        Ok(clean) => clean,
        // A record that does not read back (a bug) must still not carry the secret:
        // keep what says what happened, without the texts.
        Err(e) => {
            let mut bare = report;
            bare.turns.clear();
            bare.final_assertions.clear();
            bare.error = Some(format!(
                "the case's record held a secret and could not be cleaned ({e}); its turns are left out"
            ));
            bare
        }
    }
}
