//! The shared store: a PostgreSQL database that the processes of an execution on many
//! machines record into.

mod connect;
mod open;
mod schema;
mod store;

pub(crate) use open::{open, open_read_only, version};
