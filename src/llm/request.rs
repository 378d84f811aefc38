//! What is sent to a model.

use serde::Serialize;
use serde_json::Value;

/// A chat-completions request: what is sent, and what the cassette key is made of.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ChatRequest {
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
    /// Sampling seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// Which tool the model may or must call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
}

impl ChatRequest {
    /// Applies a case's settings for a built-in role: the model and sampling settings it
    /// sets replace the endpoint's.
    pub(crate) fn apply(&mut self, settings: &crate::case::ModelSettings) {
        if let Some(m) = &settings.model {
            self.model = m.clone();
        }
        if settings.temperature.is_some() {
            self.temperature = settings.temperature;
        }
        if settings.max_tokens.is_some() {
            self.max_tokens = settings.max_tokens;
        }
        if settings.seed.is_some() {
            self.seed = settings.seed;
        }
    }
}
