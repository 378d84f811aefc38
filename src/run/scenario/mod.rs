//! Running ElizaOS scenarios: the environment, the steps and the judgment.

mod code;
mod evaluators;
mod steps;
mod workdir;

pub(crate) use steps::run;
pub(crate) use workdir::Workdir;
