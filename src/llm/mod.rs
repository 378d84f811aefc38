//! Talking to models: an OpenAI-compatible chat-completions client with retries and
//! limits, and cassettes that record and replay every call so CI runs offline.

mod calls;
pub mod cassette;
mod client;
mod limiter;
mod rng;

pub use calls::ModelCalls;
pub use client::{ChatOutcome, Endpoint};
pub use rng::SeededRng;

use serde::Serialize;
use serde_json::Value;

/// A chat-completions request: what is sent, and what the cassette key is made of.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// OpenAI-format messages.
    pub messages: Vec<Value>,
    /// OpenAI tool schemas.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Completion token limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// `{"type": "json_object"}` and the like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
}

/// Whether we run on CI: the `CI` variable is set to anything but `false` or `0`.
pub fn on_ci() -> bool {
    crate::settings::get().ci
}
