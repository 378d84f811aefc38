//! Running ElizaOS scenarios: the environment and the steps (messages, code, simulated
//! conversations); their checks and judgment are `check::scenario`'s.

mod prepare;
mod steps;
mod workdir;

pub(crate) use prepare::{Job, Preparer};
pub(crate) use steps::{run, setup, Run};
#[cfg(test)]
pub(crate) use workdir::wait_for_removals;
pub(crate) use workdir::{wait_for_every_folder, Workdir};
