//! The run store: every run of agentest (binary, `cargo test`, nextest) recorded in an
//! embedded SQLite database, with the executions they belong to. See
//! docs/store.md for where it is and what it holds.

mod export;
mod open;
#[cfg_attr(not(test), expect(dead_code, reason = "wired in by the store backend"))]
mod postgres_schema;
mod read;
mod schema;
mod write;

pub(crate) use export::evalstudio;
pub(crate) use open::{location, open};
pub(crate) use read::{
    delete, errored, execution_root, flaky, list, show, stored, Doomed, Filter, FlakyCase, RunRow,
    Stored, LIFECYCLE, VERDICTS,
};
pub(crate) use write::{Claim, ExecutionInfo, Planned, Resumed, StoreWriter};
