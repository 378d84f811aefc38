//! Judges: a model (or an agent speaking the validator contract) decides whether a reply
//! meets criteria, answering `{passed, score, reason, suggestions}`. A judge that cannot
//! answer is an error, never a pass or a fail.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::agent::BoxFuture;
use crate::llm::{CassetteMode, Endpoint, LlmError, ModelCalls};
use crate::protocol::Message;
use crate::protocol::Role;

/// A judge's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// Whether the reply meets the criteria.
    pub passed: bool,
    /// A score from 0 to 1, when the judge gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// How the reply could be better.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

/// Why a judge gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    /// No model to be had (no recording, no API key): skipped outside CI, failed on CI.
    #[error("{0}")]
    Unavailable(String),
    /// The judge broke: it could not be reached, or answered twice without a verdict.
    #[error("{0}")]
    Broken(String),
}

/// What a judge is asked.
#[derive(Debug, Clone, Default)]
pub struct JudgeRequest {
    /// What the reply must satisfy.
    pub criteria: String,
    /// The reply under judgment.
    pub output: String,
    /// The user message it answers.
    pub input: String,
    /// The conversation, ending with the reply.
    pub conversation: Vec<Message>,
    /// Other metadata from the assertion (`expected_intent`, `tone`, ...).
    pub metadata: Map<String, Value>,
    /// ElizaOS's `expected`, `capabilities`, `json_schema`.
    pub expected: Option<Value>,
    /// Capabilities the reply should show.
    pub capabilities: Vec<String>,
    /// A JSON schema the verdict must follow (extra fields beyond the contract).
    pub json_schema: Option<Value>,
    /// Sampling temperature for this judgment.
    pub temperature: Option<f64>,
}

impl JudgeRequest {
    /// The validator contract's input, as an agent judge receives it in `metadata`.
    pub fn to_json(&self) -> Value {
        let mut v = self.metadata.clone();
        v.insert("test_mode".into(), json!("validator"));
        v.insert("criteria".into(), json!(self.criteria));
        v.insert("output".into(), json!(self.output));
        v.insert("input".into(), json!(self.input));
        v.insert("conversation".into(), json!(self.conversation));
        if let Some(e) = &self.expected {
            v.insert("expected".into(), e.clone());
        }
        if !self.capabilities.is_empty() {
            v.insert("capabilities".into(), json!(self.capabilities));
        }
        Value::Object(v)
    }
}

/// Runs judgments for the assertions of one case. The engine provides one that knows
/// the case's model calls and configured agents.
pub trait Judges: Send + Sync {
    /// Judges with the agent `agent` (from `use: "agents:NAME"`), or the built-in judge.
    fn judge<'a>(
        &'a self,
        agent: Option<&'a str>,
        request: &'a JudgeRequest,
    ) -> BoxFuture<'a, Result<JudgeVerdict, JudgeError>>;
}

const SYSTEM: &str = "You are a strict, fair evaluator of an AI assistant's reply. Decide whether the reply meets the criteria, judging only what the reply says. Answer with JSON only: {\"passed\": true or false, \"score\": a number from 0 to 1, \"reason\": \"one or two sentences\", \"suggestions\": [\"how the reply could be better\"]}";

/// The built-in judge: one chat call on a model endpoint, one repair attempt when the
/// answer is not a verdict.
pub(crate) async fn model_judge(
    endpoint: &Endpoint,
    calls: &ModelCalls,
    request: &JudgeRequest,
    deadline: Instant,
) -> Result<JudgeVerdict, JudgeError> {
    let mut prompt = format!("Criteria: {}\n", request.criteria);
    for (k, v) in &request.metadata {
        prompt.push_str(&format!("{k}: {}\n", crate::util::value_text(v)));
    }
    if let Some(e) = &request.expected {
        prompt.push_str(&format!("Expected: {}\n", crate::util::value_text(e)));
    }
    if !request.capabilities.is_empty() {
        prompt.push_str(&format!(
            "Capabilities to show: {}\n",
            request.capabilities.join(", ")
        ));
    }
    if let Some(schema) = &request.json_schema {
        prompt.push_str(&format!(
            "Your JSON must also follow this schema: {schema}\n"
        ));
    }
    prompt.push_str("\nConversation:\n");
    for m in &request.conversation {
        prompt.push_str(&format!("{}: {}\n", m.role, m.text()));
    }
    prompt.push_str(&format!("\nThe reply to judge:\n{}\n", request.output));
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": prompt}),
    ];
    for attempt in 0..2 {
        let mut chat = endpoint.request(messages.clone(), Vec::new());
        chat.response_format = Some(json!({"type": "json_object"}));
        if request.temperature.is_some() {
            chat.temperature = request.temperature;
        }
        let outcome = calls
            .chat(endpoint, Role::Judge, &chat, deadline)
            .await
            .map_err(|e| match e {
                LlmError::Unavailable(m) => JudgeError::Unavailable(format!("judge: {m}")),
                other => JudgeError::Broken(format!("judge model call failed: {other}")),
            })?;
        let content = outcome.message()["content"].clone();
        match read_verdict(&content) {
            Some(v) => return Ok(v),
            None if attempt == 0 => {
                messages.push(json!({"role": "assistant", "content": content}));
                messages.push(json!({"role": "user", "content": "That was not a verdict. Answer again with JSON only, with a boolean \"passed\" and a \"reason\"."}));
            }
            None => {
                return Err(JudgeError::Broken(format!(
                    "the judge answered twice without a verdict; last answer: {}",
                    crate::util::compact(&content)
                )))
            }
        }
    }
    unreachable!("the loop returns")
}

/// Reads a verdict: JSON (possibly as text) with a boolean `passed` (or `pass`).
pub(crate) fn read_verdict(v: &Value) -> Option<JudgeVerdict> {
    let parsed = match v {
        Value::String(s) => serde_json::from_str::<Value>(s.trim()).ok()?,
        other => other.clone(),
    };
    let passed = parsed
        .get("passed")
        .or_else(|| parsed.get("pass"))?
        .as_bool()?;
    Some(JudgeVerdict {
        passed,
        score: parsed.get("score").and_then(Value::as_f64),
        reason: parsed
            .get("reason")
            .map(crate::util::value_text)
            .unwrap_or_default(),
        suggestions: match parsed.get("suggestions") {
            Some(Value::Array(items)) => items.iter().map(crate::util::value_text).collect(),
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            _ => Vec::new(),
        },
    })
}

/// A judge for your own `#[test]`s (the seed's `t.assert.Agent()`): judges a reply
/// against criteria with the `[llm]` model of an `agentest.toml`, recording every call
/// in a cassette so the test replays offline.
///
/// ```no_run
/// let judge = agentest::judge::Judge::from_config("agent-tests", "agent-tests/.cassettes/judge/greeting.jsonl")
///     .expect("a judge");
/// let verdict = judge.judge("Hello! How can I help?", "The reply greets the user").expect("a verdict");
/// assert!(verdict.passed, "{}", verdict.reason);
/// ```
pub struct Judge {
    endpoint: Arc<Endpoint>,
    cassette: std::path::PathBuf,
    mode: CassetteMode,
}

impl Judge {
    /// A judge on the `[llm]` of the `agentest.toml` found from `dir` upwards, recording
    /// into `cassette` (mode from `AGENTEST_CASSETTES` / `[run] cassettes`).
    pub fn from_config(dir: impl AsRef<Path>, cassette: impl AsRef<Path>) -> Result<Judge, String> {
        let config = crate::config::Config::discover(dir.as_ref()).map_err(|e| e.to_string())?;
        let llm = config.file.llm.as_ref().ok_or_else(|| {
            format!(
                "the judge needs a model: add an [llm] section to {}",
                config.describe()
            )
        })?;
        Ok(Judge {
            endpoint: Arc::new(Endpoint::from_config(llm, None)?),
            cassette: cassette.as_ref().to_path_buf(),
            mode: CassetteMode::resolve(config.file.run.cassettes.as_deref())?,
        })
    }

    /// Judges `reply` against `criteria`; blocks until the verdict (a 2-minute deadline).
    pub fn judge(&self, reply: &str, criteria: &str) -> Result<JudgeVerdict, JudgeError> {
        let request = JudgeRequest {
            criteria: criteria.to_string(),
            output: reply.to_string(),
            conversation: vec![Message {
                role: "assistant".into(),
                content: Value::String(reply.to_string()),
                tool_calls: None,
                name: None,
                tool_call_id: None,
            }],
            ..JudgeRequest::default()
        };
        self.judge_request(&request)
    }

    /// Judges a full request (conversation, metadata, schema).
    pub fn judge_request(&self, request: &JudgeRequest) -> Result<JudgeVerdict, JudgeError> {
        let calls = ModelCalls::new(self.cassette.clone(), self.mode);
        let deadline = Instant::now() + std::time::Duration::from_secs(120);
        let verdict = crate::harness::runtime().block_on(model_judge(
            &self.endpoint,
            &calls,
            request,
            deadline,
        ));
        calls
            .finish()
            .map_err(|e| JudgeError::Broken(e.to_string()))?;
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_json_or_text() {
        let v = read_verdict(&json!("{\"passed\": false, \"score\": 0.2, \"reason\": \"rude\", \"suggestions\": [\"be polite\"]}")).unwrap();
        assert!(!v.passed);
        assert_eq!(v.reason, "rude");
        assert_eq!(v.suggestions, vec!["be polite"]);
        assert!(read_verdict(&json!({"pass": true})).unwrap().passed);
        assert!(read_verdict(&json!("looks good to me")).is_none());
        assert!(read_verdict(&json!({"passed": "yes"})).is_none());
    }
}
