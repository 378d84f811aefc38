//! Checking replies and deciding verdicts: assertions, script assertions, judges,
//! checkpoints, EvalStudio's criteria, ElizaOS scenarios' evaluations and judgment, and
//! the gate over repeats. Everything that decides pass or fail lives here; `run/`
//! plays the conversation and asks.

pub(crate) mod assertion;
pub(crate) mod blame;
pub(crate) mod calibration;
pub(crate) mod checkpoints;
pub(crate) mod code;
pub(crate) mod compare;
pub(crate) mod criteria;
pub(crate) mod each;
pub(crate) mod evaluators;
pub(crate) mod gate;
pub(crate) mod judge;
pub(crate) mod jury;
pub(crate) mod scenario;
mod scripts;

pub(crate) use assertion::parse_json_text;
pub(crate) use assertion::Verdict;
pub use assertion::{evaluate, EvalEnv, Latency, Subject};
pub(crate) use each::{check_all, first_failure, first_inconclusive};
pub(crate) use scripts::ScriptFn;
pub use scripts::{Check, Scripts};
