//! `[llm]` / `[llms.NAME]`: model endpoints.

use std::collections::BTreeMap;

use serde::Deserialize;

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
    /// Sampling seed, for endpoints that honour one.
    pub seed: Option<u64>,
    /// Nucleus sampling: the probability mass to sample from, in (0, 1].
    pub top_p: Option<f64>,
    /// Sequences at which the model stops.
    pub stop: Option<Vec<String>>,
    /// `"auto"`, `"none"`, `"required"`, or a tool to force (`{"type": "function", ...}`),
    /// sent when tools are given (default `"auto"`).
    pub tool_choice: Option<serde_json::Value>,
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
    /// How the built-in judge and simulator ask for JSON (default `json_object`).
    pub structured_output: Option<StructuredOutput>,
    /// What the endpoint's tokens cost, so cases' costs and budgets can be counted.
    pub pricing: Option<Pricing>,
}

/// `[llm.pricing]` / `[llms.NAME.pricing]`: the price of an endpoint's tokens.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// The price of a million input (prompt) tokens.
    pub input_per_million: f64,
    /// The price of a million output (completion) tokens.
    pub output_per_million: f64,
    /// The price of a million input tokens the provider served from its prompt cache
    /// (default: the input price).
    pub cached_input_per_million: Option<f64>,
    /// What the prices are in, as a label (default `USD`).
    #[serde(default = "default_currency")]
    pub currency: String,
}

fn default_currency() -> String {
    "USD".into()
}

impl Pricing {
    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: crate::protocol::TokenUsage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        let cached_price = self
            .cached_input_per_million
            .unwrap_or(self.input_per_million);
        (fresh as f64 * self.input_per_million
            + cached as f64 * cached_price
            + usage.completion_tokens as f64 * self.output_per_million)
            / 1_000_000.0
    }
}

/// `structured_output`: the `response_format` the built-in roles (judges, the
/// simulator, criteria evaluations, generators, reporters) send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// The strictest form the endpoint takes, found by trying them in turn
    /// (`json_schema`, `json_object_schema`, `json_object`, then none) and remembered
    /// for the endpoint and model for the rest of the process.
    #[default]
    Auto,
    /// `{"type": "json_schema", "json_schema": {name, schema}}`: OpenAI's structured
    /// outputs, also vLLM, Ollama, LM Studio and llama.cpp's own server.
    JsonSchema,
    /// `{"type": "json_object"}`: JSON mode, which every server tried accepts.
    JsonObject,
    /// `{"type": "json_object", "schema": ...}`: JSON mode constrained to the answer's
    /// schema, the form llama-cpp-python (which rejects `json_schema`) and llama.cpp take.
    JsonObjectSchema,
    /// No `response_format`: the instructions alone ask for JSON.
    Off,
}

impl StructuredOutput {
    /// The name as `agentest.toml` spells it.
    pub fn name(self) -> &'static str {
        match self {
            StructuredOutput::Auto => "auto",
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::JsonObjectSchema => "json_object_schema",
            StructuredOutput::Off => "off",
        }
    }
}
