//! Checking replies: assertions, script assertions and judges.

mod assertion;
pub mod gate;
pub mod judge;
mod scripts;

pub(crate) use assertion::parse_json_text;
pub use assertion::{evaluate, EvalEnv, Latency, Subject};
pub use scripts::{Check, ScriptFn, Scripts};
