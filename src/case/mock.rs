//! Tool mocks, compiled: which tool, when, and what it answers.

use std::time::Duration;

use regex::Regex;
use serde_json::Value;

/// One mock, compiled.
#[derive(Debug, Clone)]
pub struct Mock {
    /// Where it was written (`setup.mocks[0]`, `[agents."x"].mocks[1]`), for messages.
    pub source: String,
    /// The tool name it answers.
    pub method: String,
    pub(crate) args: Option<Value>,
    pub(crate) partial: Option<Value>,
    pub(crate) input: Option<Value>,
    pub(crate) matcher: Option<Regex>,
    pub(crate) response: Value,
    pub(crate) error: Option<Value>,
    pub(crate) delay: Option<Duration>,
    pub(crate) probability: Option<f64>,
    pub(crate) conditions: String,
}

/// What a mocked tool answers.
#[derive(Debug, Clone, PartialEq)]
pub enum MockAnswer {
    /// A result.
    Result(Value),
    /// An error (`{code, message, status}`).
    Error(Value),
}
