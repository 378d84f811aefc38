//! `openai` agents: a model, a system prompt and tools. The harness runs the tool loop:
//! when the model calls a tool, a mock answers (or, with `--live`, the real tool
//! endpoint), and the model is called again until it answers without tool calls.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::agent::mocks::MockSet;
use crate::agent::{CaseScope, Timed};
use crate::case::{Mock, MockAnswer};
use crate::config::{Config, OpenAiAgentConfig};
use crate::errors::{AgentError, AgentSetupError, StepError};
use crate::llm::{Endpoint, SeededRng};
use crate::protocol::TokenUsage;
use crate::protocol::{Reply, Request, ToolCall, Usage};
use crate::source::parse_config_mocks;

/// Model calls per turn before the tool loop gives up, unless the config says otherwise.
const DEFAULT_TOOL_ROUNDS: u32 = 8;

/// A configured `openai` agent.
pub(crate) struct OpenAiSpec {
    pub(crate) shown: String,
    endpoint: Endpoint,
    system: Option<String>,
    tools: Vec<Value>,
    tools_url: Option<(reqwest::Url, String)>,
    max_rounds: u32,
    mocks: Vec<Mock>,
    client: reqwest::Client,
}

impl OpenAiSpec {
    /// What a case generator is told of this agent: its instructions (the system
    /// prompt) and its tools.
    pub(crate) fn described(&self) -> (Option<String>, Vec<Value>) {
        (self.system.clone(), self.tools.clone())
    }

    /// The same agent on another model endpoint: `-c/--connector NAME` naming an
    /// `[llms.NAME]`. The endpoint's own model is used, not the agent's `model`.
    pub(crate) fn on_endpoint(&self, endpoint: Endpoint) -> OpenAiSpec {
        OpenAiSpec {
            shown: format!("{} via {}", endpoint.model(), endpoint.shown()),
            endpoint,
            system: self.system.clone(),
            tools: self.tools.clone(),
            tools_url: self.tools_url.clone(),
            max_rounds: self.max_rounds,
            mocks: self.mocks.clone(),
            client: self.client.clone(),
        }
    }

    pub(crate) fn new(
        cfg: &OpenAiAgentConfig,
        config: &Config,
        what: &str,
    ) -> Result<OpenAiSpec, AgentSetupError> {
        let endpoint = Self::endpoint(cfg, config, what)?;
        let system = match (&cfg.system, &cfg.system_file) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(f)) => Some(read_beside(config, what, f, "system_file")?),
            (None, None) => None,
        };
        let tools = Self::tools(cfg, config, what)?;
        let tools_url = match &cfg.tools_url {
            Some(u) => Some(tools_url(u, what)?),
            None => None,
        };
        let client = crate::util::http::client_builder()
            .build()
            .map_err(AgentSetupError::Client)?;
        Ok(OpenAiSpec {
            shown: format!("{} via {}", endpoint.model(), endpoint.shown()),
            endpoint,
            system,
            tools,
            tools_url,
            max_rounds: cfg.max_tool_rounds.unwrap_or(DEFAULT_TOOL_ROUNDS),
            mocks: parse_config_mocks(&cfg.mocks, what)?,
            client,
        })
    }

    /// The model the agent runs on: its `llm` (or the config's default one), with its
    /// own `model` in place of the LLM's.
    fn endpoint(
        cfg: &OpenAiAgentConfig,
        config: &Config,
        what: &str,
    ) -> Result<Endpoint, AgentSetupError> {
        let llm = match &cfg.llm {
            Some(n) => config
                .file
                .llms
                .get(n)
                .ok_or_else(|| AgentSetupError::UndefinedLlm {
                    table: what.to_string(),
                    name: n.clone(),
                })?,
            None => config
                .file
                .llm
                .as_ref()
                .ok_or_else(|| AgentSetupError::NoLlm {
                    table: what.to_string(),
                    config: config.describe(),
                })?,
        };
        let mut llm = llm.clone();
        if let Some(m) = &cfg.model {
            llm.model = Some(m.clone());
        }
        Endpoint::from_config(&llm, cfg.llm.as_deref())
    }

    /// The tools offered to the model, from `tools` or `tools_file`; each must be a
    /// function schema with a name.
    fn tools(
        cfg: &OpenAiAgentConfig,
        config: &Config,
        what: &str,
    ) -> Result<Vec<Value>, AgentSetupError> {
        let tools = match &cfg.tools_file {
            Some(f) => {
                let text = read_beside(config, what, f, "tools_file")?;
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Array(items)) => items,
                    Ok(_) => {
                        return Err(AgentSetupError::ToolsNotArray {
                            table: what.to_string(),
                            file: f.clone(),
                        })
                    }
                    Err(source) => {
                        return Err(AgentSetupError::ToolsJson {
                            table: what.to_string(),
                            file: f.clone(),
                            source,
                        })
                    }
                }
            }
            None => cfg.tools.clone(),
        };
        for (i, t) in tools.iter().enumerate() {
            if t["function"]["name"].as_str().is_none() {
                return Err(AgentSetupError::NotToolSchema {
                    table: what.to_string(),
                    index: i,
                });
            }
        }
        Ok(tools)
    }
}

/// A file named in the agent's table, relative to the config's folder.
fn read_beside(
    config: &Config,
    what: &str,
    file: &str,
    key: &'static str,
) -> Result<String, AgentSetupError> {
    let path = config.dir.join(file);
    std::fs::read_to_string(&path).map_err(|source| AgentSetupError::ReadFile {
        table: what.to_string(),
        key,
        path,
        source,
    })
}

/// `tools_url`, its `${VAR}`s expanded, and as shown (without its secrets).
fn tools_url(u: &str, what: &str) -> Result<(reqwest::Url, String), AgentSetupError> {
    let expanded = crate::util::expand_secret(u, &format!("{what}.tools_url"))?;
    let shown = crate::util::shown_url(u);
    let url = reqwest::Url::parse(&expanded).map_err(|source| AgentSetupError::Url {
        key: format!("{what}.tools_url"),
        shown: shown.clone(),
        source,
    })?;
    Ok((url, shown))
}

/// One conversation with an `openai` agent. It keeps the model's own history (tool
/// calls and tool messages included) and takes only the new user messages from each
/// request.
pub(crate) struct OpenAiSession {
    spec: Arc<OpenAiSpec>,
    scope: CaseScope,
    history: Vec<Value>,
    seen: usize,
    rng: SeededRng,
    mocks: MockSet,
    /// What a turn that failed had done: the tool calls the model made, and its usage.
    partial: Option<Reply>,
}

impl OpenAiSession {
    pub(crate) fn new(spec: Arc<OpenAiSpec>, scope: &CaseScope) -> OpenAiSession {
        let history = spec
            .system
            .iter()
            .map(|s| json!({"role": "system", "content": s}))
            .collect();
        let mocks = MockSet(scope.mocks.iter().chain(&spec.mocks).cloned().collect());
        OpenAiSession {
            rng: SeededRng::new(scope.seed, &scope.salt),
            spec,
            scope: scope.clone(),
            history,
            seen: 0,
            mocks,
            partial: None,
        }
    }

    /// What the last turn did before it failed (a tool loop out of rounds, a model call
    /// refused, a tool call no mock answers): the calls made and the tokens spent, so
    /// the turn's record keeps them.
    pub(crate) fn take_partial(&mut self) -> Option<Reply> {
        self.partial.take()
    }

    /// Sends one turn. Its first byte is the answer of the turn's first model call (a
    /// model that calls tools answers more than once).
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, StepError> {
        for m in request.messages.iter().skip(self.seen) {
            self.history.push(to_openai(m));
        }
        // The engine appends our reply to its history; we keep the richer one.
        self.seen = request.messages.len() + 1;
        let mut made: Vec<ToolCall> = Vec::new();
        let mut usage = TokenUsage::default();
        let mut first_byte = None;
        let result = self.tool_loop(&mut made, &mut usage, &mut first_byte).await;
        if result.is_err() {
            self.partial = Some(Reply {
                tool_calls: made,
                usage: Some(Usage {
                    input_tokens: usage.prompt_tokens,
                    output_tokens: usage.completion_tokens,
                }),
                ..Reply::default()
            });
        }
        result.map(|value| Timed { value, first_byte })
    }

    /// Calls the model, answering its tool calls, until it answers without any.
    async fn tool_loop(
        &mut self,
        made: &mut Vec<ToolCall>,
        usage: &mut TokenUsage,
        first_byte: &mut Option<std::time::Instant>,
    ) -> Result<Reply, StepError> {
        for _ in 0..self.spec.max_rounds {
            let chat = self
                .spec
                .endpoint
                .request(self.history.clone(), self.spec.tools.clone());
            let outcome = self
                .scope
                .calls
                .chat(
                    &self.spec.endpoint,
                    self.scope.role,
                    &chat,
                    self.scope.deadline,
                )
                .await
                .map_err(StepError::from)?;
            first_byte.get_or_insert_with(std::time::Instant::now);
            usage.add(outcome.usage());
            let message = outcome.message().clone();
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            self.history.push(assistant_message(&message));
            if calls.is_empty() {
                let content = match &message["content"] {
                    Value::Null => Value::String(String::new()),
                    other => other.clone(),
                };
                return Ok(Reply {
                    content,
                    tool_calls: std::mem::take(made),
                    usage: Some(Usage {
                        input_tokens: usage.prompt_tokens,
                        output_tokens: usage.completion_tokens,
                    }),
                    truncated: outcome.truncated().then_some(true),
                    ..Reply::default()
                });
            }
            for call in calls {
                self.run_tool_call(&call, made).await?;
            }
        }
        Err(AgentError::ToolRounds {
            rounds: self.spec.max_rounds,
        }
        .into())
    }

    /// Answers one tool call the model made: the answer goes to the model's history,
    /// the call (with its answer, or why it failed) to `made`.
    async fn run_tool_call(
        &mut self,
        call: &Value,
        made: &mut Vec<ToolCall>,
    ) -> Result<(), StepError> {
        let id = call["id"].as_str().unwrap_or_default().to_string();
        let name = call["function"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let raw = &call["function"]["arguments"];
        let arguments = match raw {
            Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| raw.clone()),
            other => other.clone(),
        };
        let (result, error) = match self.answer(&name, &arguments).await {
            Ok(answer) => answer,
            Err(e) => {
                // The call the model made stays in the record, with why it failed.
                made.push(ToolCall {
                    name,
                    arguments,
                    result: None,
                    error: Some(Value::String(e.to_string())),
                    source: None,
                });
                return Err(e);
            }
        };
        let content = match (&result, &error) {
            (_, Some(e)) => json!({"error": e}).to_string(),
            (Some(r), None) => r.to_string(),
            (None, None) => "null".into(),
        };
        self.history
            .push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        made.push(ToolCall {
            name,
            arguments,
            result,
            error,
            source: None,
        });
        Ok(())
    }

    /// A tool's answer: `(result, error)`.
    async fn answer(
        &mut self,
        name: &str,
        arguments: &Value,
    ) -> Result<(Option<Value>, Option<Value>), StepError> {
        if self.scope.live {
            return Ok(self.live(name, arguments).await?);
        }
        match self.mocks.answer(name, arguments, &mut self.rng).await {
            Ok((MockAnswer::Result(r), _)) => Ok((Some(r), None)),
            Ok((MockAnswer::Error(e), _)) => Ok((None, Some(e))),
            Err(e) => Err(e.into()),
        }
    }

    async fn live(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Result<(Option<Value>, Option<Value>), AgentError> {
        let Some((url, shown)) = &self.spec.tools_url else {
            return Err(AgentError::NoToolsUrl {
                tool: name.to_string(),
            });
        };
        let unreachable = |e: reqwest::Error| AgentError::ToolEndpoint {
            shown: shown.clone(),
            source: e.without_url(),
        };
        let left = self
            .scope
            .deadline
            .saturating_duration_since(Instant::now());
        let sent = self
            .spec
            .client
            .post(url.clone())
            .timeout(left)
            .json(&json!({"name": name, "arguments": arguments}))
            .send()
            .await
            .map_err(unreachable)?;
        let status = sent.status();
        let body = sent.bytes().await.map_err(unreachable)?;
        let parsed: Result<Value, _> = serde_json::from_slice(&body);
        match (status.is_success(), parsed) {
            (true, Ok(v)) => Ok((Some(v), None)),
            (true, Err(source)) => Err(AgentError::ToolEndpointJson {
                shown: shown.clone(),
                tool: name.to_string(),
                source,
            }),
            (false, parsed) => Ok((
                None,
                Some(json!({
                    "status": status.as_u16(),
                    "message": parsed.ok().unwrap_or_else(|| Value::String(String::from_utf8_lossy(&body).into_owned())),
                })),
            )),
        }
    }
}

/// A protocol message in the chat-completions shape.
fn to_openai(m: &crate::protocol::Message) -> Value {
    let content = match &m.content {
        Value::String(s) => Value::String(s.clone()),
        Value::Null => Value::Null,
        other => Value::String(other.to_string()),
    };
    let mut v = json!({"role": m.role, "content": content});
    if let Some(n) = &m.name {
        v["name"] = json!(n);
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// The assistant message to keep in the history: role, content and tool calls only.
fn assistant_message(message: &Value) -> Value {
    // A tool-calling answer has `content: null`, which some servers refuse to read back
    // (llama-cpp-python answers HTTP 500); an empty string means the same to all.
    let content = match &message["content"] {
        Value::Null => Value::String(String::new()),
        other => other.clone(),
    };
    let mut v = json!({"role": "assistant", "content": content});
    if let Some(calls) = message
        .get("tool_calls")
        .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        v["tool_calls"] = calls.clone();
    }
    v
}
