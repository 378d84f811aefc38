//! `agentest view`: a read-only web viewer over the run store, on loopback.
//!
//! [`server`] listens, checks the token and hands each GET to [`routes`], which reads
//! the store and answers JSON under `/api/` or a page ([`pages`], with [`charts`]).
//! [`query`] decodes what a URL carries. docs/view.md documents the pages and the API.

mod charts;
mod pages;
mod query;
mod routes;
mod server;

pub(super) use server::{view, ViewArgs};
