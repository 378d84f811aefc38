//! Running ElizaOS scenarios: the environment, the steps (messages, code, simulated
//! conversations) and the judgment.

mod code;
mod conversation;
mod evaluators;
mod prepare;
mod steps;
mod workdir;

pub(crate) use prepare::{Job, Preparer};
pub(crate) use steps::{run, Run};
pub(crate) use workdir::{wait_for_removals, Workdir};
