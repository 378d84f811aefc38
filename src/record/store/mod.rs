//! The run store: every run of agentest (binary, `cargo test`, nextest) recorded with
//! the executions they belong to, in an embedded SQLite file or a PostgreSQL database,
//! behind one [`backend::Backend`]. See docs/store.md for where it is and what it holds.

mod backend;
mod export;
mod location;
mod model;
mod postgres;
mod row;
mod sqlite;
mod writer;

pub(crate) use backend::{Backend, Settled};
pub(crate) use export::evalstudio;
pub(crate) use location::{location, open, open_read_only, version};
pub(crate) use model::{
    Claim, Decision, Doomed, ExecutionFilter, ExecutionInfo, ExecutionRow, Filter, FlakyCase,
    Planned, RepeatEnd, Resumed, RoleTotals, RunRow, Stored, StoredCalibration, StoredRepeat, Work,
    LIFECYCLE, VERDICTS,
};
pub(crate) use row::LEASE;
pub(crate) use writer::{
    calibration, known_form, learn_form, spend, spent_elsewhere, start_request, Decide, StoreWriter,
};
