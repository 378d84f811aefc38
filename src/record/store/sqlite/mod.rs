//! The embedded store: SQLite, compiled in, one file (WAL mode) shared by the processes
//! of a run on one machine.

mod open;
pub(super) mod schema;
mod store;

pub(crate) use open::{open, open_read_only, version};
pub(crate) use schema::VERSION;
