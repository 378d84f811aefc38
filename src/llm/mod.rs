//! Talking to models: an OpenAI-compatible chat-completions client with retries and
//! limits, and cassettes that record and replay every call so CI runs offline.

mod calls;
pub mod cassette;
mod client;
mod limiter;
mod rng;

pub use calls::{CallStats, ModelCalls};
pub use cassette::{CassetteMode, CassetteStats};
pub use client::{ChatOutcome, Endpoint};
pub use rng::SeededRng;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `[llm]` / `[llms.NAME]`: one OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL up to `/chat/completions`, like `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// The name of the environment variable that holds the API key (never the key).
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Completion token limit.
    pub max_tokens: Option<u32>,
    /// Per-request timeout, like `"60s"`.
    pub timeout: Option<String>,
    /// Extra headers (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Retries after the first try on 429, 5xx, timeouts and dropped connections (default 4).
    pub max_retries: Option<u32>,
    /// Requests in flight at once to this endpoint, per process (default 16).
    pub max_in_flight: Option<usize>,
    /// Requests started per minute, per process (default: no limit).
    pub requests_per_minute: Option<u32>,
}

/// Who made a model call, for token accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The agent under test (an `openai` agent).
    Agent,
    /// The user simulator.
    Simulator,
    /// A judge.
    Judge,
}

impl Role {
    /// The lowercase name, as in reports.
    pub fn name(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Simulator => "simulator",
            Role::Judge => "judge",
        }
    }
}

/// Token usage of one call, as the chat-completions API reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    #[serde(default, alias = "input_tokens")]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default, alias = "output_tokens")]
    pub completion_tokens: u64,
}

impl TokenUsage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

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

/// A model call that did not produce an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No recording and no way to call the model (no API key, or replay-only mode).
    /// Outside CI such a case is ignored with this reason; on CI it fails.
    #[error("{0}")]
    Unavailable(String),
    /// The endpoint refused or failed, after any retries.
    #[error("{0}")]
    Failed(String),
    /// A cassette file could not be read or written.
    #[error("{0}")]
    Cassette(String),
}

/// Whether we run on CI: the `CI` variable is set to anything but `false` or `0`.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}
