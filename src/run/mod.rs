//! Running cases: the scheduler, the case lifecycle (hooks, deadline, panic guard), the
//! conversation loops and the roles that are not the agent under test.

pub(crate) mod awaiting;
pub(crate) mod calibrate;
pub(crate) mod context;
pub(crate) mod conversation;
pub(crate) mod engine;
pub(crate) mod execution;
mod generate;
pub(crate) mod hooks;
mod lifecycle;
pub(crate) mod options;
pub(crate) mod outcome;
pub(crate) mod repeats;
pub(crate) mod reporter;
pub(crate) mod roles;
mod runtime;
pub(crate) mod scenario;
pub(crate) mod scheduler;
mod slow;

pub(crate) use runtime::runtime;
