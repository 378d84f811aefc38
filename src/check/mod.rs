//! Checking replies: assertions, script assertions and judges.

mod assertion;
pub mod judge;
mod scripts;

pub use assertion::{evaluate, json_subset, EvalEnv, Subject};
pub(crate) use assertion::{json_eq, tool_name_matches};
pub use scripts::{Check, ScriptFn, Scripts};
