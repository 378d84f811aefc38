//! Recording results: the report model, the sinks and formats that write it, the console,
//! golden transcripts and the commands that review, accept and freeze them.

pub(crate) mod console;
pub mod format;
pub(crate) mod freeze;
pub(crate) mod golden;
mod jsonl;
mod model;
mod recorder;
pub(crate) mod review;
mod sink;
mod stability;
pub(crate) mod store;

pub use format::{failure_message, Format};
pub use jsonl::JsonlWriter;
pub use model::{
    rfc3339, AssertionReport, AwaitReason, CaseReport, CassetteStats, CheckpointReport, CodeRun,
    Cost, CriteriaEvaluation, Ending, EvalStudioIds, Judgment, RoleCost, RunInfo, RunResult,
    Status, StepRef, Summary, TurnReport,
};
pub(crate) use recorder::Recorder;
pub use sink::{parse_jsonl, read_reports, ReportSink};
pub use stability::{DurationStats, Stability, StabilityClass};
