//! A built-in role's model settings as a case writes them: the simulator's, a judge's.

/// A case's model settings for a built-in role (the simulator, or a judge): which
/// endpoint it calls and what it changes in that endpoint's request. Unset fields keep
/// the endpoint's own. ElizaOS's `model_type` maps onto `llm` (an `[llms.NAME]` table).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// `llm`: an `[llms.NAME]` endpoint instead of the role's default.
    pub llm: Option<String>,
    /// `model`: the model name sent instead of the endpoint's.
    pub model: Option<String>,
    /// `temperature`, from 0 to 2.
    pub temperature: Option<f64>,
    /// `max_tokens`: the completion token limit.
    pub max_tokens: Option<u32>,
    /// `seed`: a sampling seed, for endpoints that honour one.
    pub seed: Option<u64>,
}

impl ModelSettings {
    /// The keys that set them, as written in case files.
    pub const KEYS: [&'static str; 5] = ["llm", "model", "temperature", "max_tokens", "seed"];

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }
}
