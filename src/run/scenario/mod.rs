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
#[cfg(test)]
pub(crate) use workdir::wait_for_removals;
pub(crate) use workdir::{wait_for_every_folder, Workdir};
