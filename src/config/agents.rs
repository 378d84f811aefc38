//! Agent tables (`[agent]`, `[agents.NAME]`): every kind's keys, checked against the kind.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::errors::AgentSetupError;

/// The kinds of agent a config can define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum AgentKind {
    Process,
    Http,
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "langgraph")]
    LangGraph,
    A2a,
    Eliza,
}

/// An agent table as written: every kind's keys, checked against the kind afterwards.
/// (A serde-tagged enum would lose the line of an unknown key; this keeps it.)
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    #[serde(rename = "type")]
    kind: AgentKind,
    command: Option<Vec<String>>,
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    timeout: Option<String>,
    llm: Option<String>,
    model: Option<String>,
    system: Option<String>,
    system_file: Option<String>,
    tools: Option<Vec<serde_json::Value>>,
    tools_file: Option<String>,
    tools_url: Option<String>,
    max_tool_rounds: Option<u32>,
    mocks: Option<Vec<serde_json::Value>>,
    retries: Option<u32>,
    assistant_id: Option<String>,
    config: Option<serde_json::Value>,
    context: Option<serde_json::Value>,
    format: Option<HttpFormat>,
    body: Option<serde_json::Value>,
    reply: Option<HttpReplyPaths>,
    session: Option<HttpSessionRequest>,
    stream: Option<StreamKey>,
    card: Option<String>,
    binding: Option<String>,
    version: Option<String>,
    allow_card_redirect: Option<bool>,
    agent_id: Option<String>,
    /// Whether the agent's OpenTelemetry spans are read (every kind).
    traces: Option<bool>,
}

/// `stream = ...` as written: `"sse"` for an `http` agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum StreamKey {
    /// `stream = true` / `false`.
    Flag(bool),
    /// `stream = "sse"`.
    Mode(String),
}

/// What an `http` agent's request and reply look like (`format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpFormat {
    /// agentest's own request and reply bodies.
    #[default]
    Agentest,
    /// An OpenAI-compatible chat endpoint that runs its own tools.
    OpenaiChat,
    /// A `body` template, and `reply` paths into the answer.
    Custom,
}

/// `[agents.NAME.reply]`: JSONPath expressions into a `custom` agent's answer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpReplyPaths {
    /// The reply's content.
    pub content: Option<String>,
    /// Whether the agent waits for the user.
    pub awaiting_input: Option<String>,
    /// Structured output.
    pub data: Option<String>,
    /// The tool calls.
    pub tool_calls: Option<HttpToolCallPaths>,
    /// Token usage.
    pub usage: Option<HttpUsagePaths>,
}

/// `tool_calls = { path, name, arguments, result }`: `path` selects the calls, the others
/// are relative to each.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpToolCallPaths {
    /// Selects the calls in the answer.
    pub path: String,
    /// The tool's name, in one call.
    pub name: String,
    /// Its arguments, in one call.
    pub arguments: Option<String>,
    /// Its result, in one call.
    pub result: Option<String>,
}

/// `usage = { input_tokens, output_tokens }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpUsagePaths {
    /// Prompt tokens.
    pub input_tokens: Option<String>,
    /// Completion tokens.
    pub output_tokens: Option<String>,
}

/// `[agents.NAME.session]`: a request made once per case before its first turn, whose
/// answer holds the conversation's id (`{{session.id}}`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSessionRequest {
    /// Where it is POSTed.
    pub url: String,
    /// Its body template (default `{}`).
    pub body: Option<serde_json::Value>,
    /// The JSONPath of the id in the answer.
    pub id: String,
}

/// An `openai` agent: a model, a system prompt and tools, with the tool loop run by the
/// harness against mocks (or, with `--live`, the real tool endpoint).
#[derive(Debug, Clone, Default)]
pub struct OpenAiAgentConfig {
    /// `[llms.NAME]` to use (default `[llm]`).
    pub llm: Option<String>,
    /// Overrides the endpoint's model.
    pub model: Option<String>,
    /// The system prompt, inline.
    pub system: Option<String>,
    /// The system prompt, from a file relative to the config.
    pub system_file: Option<String>,
    /// OpenAI tool schemas, inline.
    pub tools: Vec<serde_json::Value>,
    /// OpenAI tool schemas, from a JSON file (an array) relative to the config.
    pub tools_file: Option<String>,
    /// Where tool calls go in live mode: each call is POSTed as `{name, arguments}`.
    pub tools_url: Option<String>,
    /// Model calls per turn before the tool loop gives up (default 8).
    pub max_tool_rounds: Option<u32>,
    /// Mocks for this agent's tools (a case's `setup.mocks` come first).
    pub mocks: Vec<serde_json::Value>,
}

/// A `langgraph` agent: a graph behind a LangGraph Agent Server, one thread per case.
#[derive(Debug, Clone, Default)]
pub struct LangGraphAgentConfig {
    /// The server's base URL.
    pub url: String,
    /// A graph name from `langgraph.json`, or an assistant id.
    pub assistant_id: String,
    /// Extra request headers (`x-api-key`).
    pub headers: BTreeMap<String, String>,
    /// Sent as each run's `config` (e.g. `configurable`).
    pub config: Option<serde_json::Value>,
    /// Sent as each run's `context`.
    pub context: Option<serde_json::Value>,
    /// Calls `/runs/stream` (server-sent events) rather than `/runs/wait`.
    pub stream: bool,
    /// Per-request timeout, like `"30s"`.
    pub timeout: Option<String>,
    /// Retries as an `http` agent's.
    pub retries: Option<u32>,
}

/// An `a2a` agent (Agent2Agent): its card says the endpoint, binding and version.
#[derive(Debug, Clone, Default)]
pub struct A2aAgentConfig {
    /// The agent's base URL (its card at `/.well-known/agent-card.json`).
    pub url: Option<String>,
    /// A card URL or file, instead of the base URL's.
    pub card: Option<String>,
    /// `"jsonrpc"` or `"http+json"`, over the card's preference.
    pub binding: Option<A2aBinding>,
    /// `"1.0"` or `"0.3"`, over the card's.
    pub version: Option<A2aVersion>,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// Per-request timeout, like `"30s"`.
    pub timeout: Option<String>,
    /// Retries as an `http` agent's.
    pub retries: Option<u32>,
    /// Whether the card may name an endpoint on another host than it came from.
    pub allow_card_redirect: bool,
    /// Streams each answer (`SendStreamingMessage` / `message/stream`).
    pub stream: bool,
}

/// An `eliza` agent: an agent of an ElizaOS 1.x server, one messaging session per case.
#[derive(Debug, Clone, Default)]
pub struct ElizaAgentConfig {
    /// The server's base URL.
    pub url: String,
    /// The agent's id (a UUID), or its name, looked up in `GET /api/agents`.
    pub agent_id: String,
    /// Extra request headers (`X-API-KEY` for a server with `ELIZA_SERVER_AUTH_TOKEN`).
    pub headers: BTreeMap<String, String>,
    /// Streams each answer (`transport: "sse"`) rather than waiting for it (`"http"`).
    pub stream: bool,
    /// Per-request timeout, like `"30s"`.
    pub timeout: Option<String>,
    /// Retries as an `http` agent's.
    pub retries: Option<u32>,
}

/// An A2A protocol binding agentest speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aBinding {
    /// JSON-RPC 2.0 over HTTP.
    JsonRpc,
    /// HTTP+JSON (REST).
    HttpJson,
}

/// An A2A protocol version agentest speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aVersion {
    /// 1.0: `SendMessage`, ProtoJSON, `TASK_STATE_*`, `A2A-Version: 1.0`.
    V1_0,
    /// 0.3: `message/send`, `kind` fields, lowercase states.
    V0_3,
}

impl A2aBinding {
    /// A binding as a config or a card writes it.
    pub(crate) fn parse(s: &str) -> Option<A2aBinding> {
        match s.to_ascii_lowercase().as_str() {
            "jsonrpc" | "json-rpc" => Some(A2aBinding::JsonRpc),
            "http+json" | "rest" | "http-json" => Some(A2aBinding::HttpJson),
            _ => None,
        }
    }
}

impl A2aVersion {
    /// A version as a config or a card writes it (`"0.3.0"` is 0.3).
    pub(crate) fn parse(s: &str) -> Option<A2aVersion> {
        match s.trim() {
            v if v == "1" || v.starts_with("1.") => Some(A2aVersion::V1_0),
            v if v.starts_with("0.3") => Some(A2aVersion::V0_3),
            _ => None,
        }
    }
}

/// One agent under test, checked against its kind.
#[derive(Debug, Clone)]
pub enum AgentConfig {
    /// A child process speaking JSON lines on stdin/stdout, one process per case.
    Process {
        /// Program and arguments.
        command: Vec<String>,
        /// Working directory, relative to the config file's directory.
        cwd: Option<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// How long one reply may take, like `"30s"` (default: the case's deadline).
        timeout: Option<String>,
    },
    /// An HTTP endpoint receiving one POST per turn.
    Http {
        /// The endpoint.
        url: String,
        /// Extra request headers.
        headers: BTreeMap<String, String>,
        /// Per-request timeout, like `"30s"`.
        timeout: Option<String>,
        /// Retries of a 429, 502, 503 or 504 answer or a dropped connection (default 2;
        /// 0 turns them off).
        retries: Option<u32>,
        /// The request and reply bodies' shape.
        format: HttpFormat,
        /// The request body template (`openai-chat`: extra fields; `custom`: the body).
        body: Option<serde_json::Value>,
        /// Where a `custom` answer's parts are.
        reply: Option<Box<HttpReplyPaths>>,
        /// A request made once per case for the conversation's id.
        session: Option<Box<HttpSessionRequest>>,
        /// The answer is a `text/event-stream` (`stream = "sse"`).
        sse: bool,
    },
    /// A model with a system prompt and tools; the harness runs the tool loop.
    OpenAi(OpenAiAgentConfig),
    /// A graph behind a LangGraph Agent Server.
    LangGraph(LangGraphAgentConfig),
    /// An Agent2Agent agent.
    A2a(A2aAgentConfig),
    /// An agent of an ElizaOS server.
    Eliza(ElizaAgentConfig),
}

impl RawAgent {
    /// `traces = true`: the agent's spans are read.
    pub(super) fn traces(&self) -> bool {
        self.traces == Some(true)
    }

    /// The agent the table describes, its keys checked here and what they say beyond
    /// that by `wire` (see [`super::Loader::agent`]).
    pub(super) fn check(
        self,
        wire: fn(&AgentConfig) -> Result<(), AgentSetupError>,
    ) -> Result<AgentConfig, AgentSetupError> {
        let given = self.given();
        let (kind, allowed) = allowed_keys(&self.kind);
        if let Some((key, _)) = given
            .iter()
            .find(|(k, present)| *present && !allowed.contains(k))
        {
            return Err(AgentSetupError::KeyNotApplicable { key, kind });
        }
        match self.kind {
            AgentKind::Process => self.check_process(),
            AgentKind::Http => self.check_http(wire),
            AgentKind::LangGraph => self.check_langgraph(),
            AgentKind::A2a => self.check_a2a(),
            AgentKind::Eliza => self.check_eliza(),
            AgentKind::OpenAi => self.check_openai(),
        }
    }

    /// Each key the table may hold, and whether it is given.
    fn given(&self) -> [(&'static str, bool); 29] {
        [
            ("command", self.command.is_some()),
            ("cwd", self.cwd.is_some()),
            ("env", !self.env.is_empty()),
            ("url", self.url.is_some()),
            ("headers", !self.headers.is_empty()),
            ("timeout", self.timeout.is_some()),
            ("llm", self.llm.is_some()),
            ("model", self.model.is_some()),
            ("system", self.system.is_some()),
            ("system_file", self.system_file.is_some()),
            ("tools", self.tools.is_some()),
            ("tools_file", self.tools_file.is_some()),
            ("tools_url", self.tools_url.is_some()),
            ("max_tool_rounds", self.max_tool_rounds.is_some()),
            ("mocks", self.mocks.is_some()),
            ("retries", self.retries.is_some()),
            ("assistant_id", self.assistant_id.is_some()),
            ("config", self.config.is_some()),
            ("context", self.context.is_some()),
            ("format", self.format.is_some()),
            ("body", self.body.is_some()),
            ("reply", self.reply.is_some()),
            ("session", self.session.is_some()),
            ("stream", self.stream.is_some()),
            ("card", self.card.is_some()),
            ("binding", self.binding.is_some()),
            ("version", self.version.is_some()),
            ("allow_card_redirect", self.allow_card_redirect.is_some()),
            ("agent_id", self.agent_id.is_some()),
        ]
    }

    /// `type = "process"`: a command to start.
    fn check_process(self) -> Result<AgentConfig, AgentSetupError> {
        let command = self.command.ok_or(AgentSetupError::NoCommand)?;
        if command.is_empty() {
            return Err(AgentSetupError::CommandEmpty);
        }
        Ok(AgentConfig::Process {
            command,
            cwd: self.cwd,
            env: self.env,
            timeout: self.timeout,
        })
    }

    /// `type = "http"`: a URL, and how requests and replies look (`wire` checks those).
    fn check_http(
        self,
        wire: fn(&AgentConfig) -> Result<(), AgentSetupError>,
    ) -> Result<AgentConfig, AgentSetupError> {
        let url = self.url.ok_or(AgentSetupError::NoUrl)?;
        let sse = match self.stream {
            None | Some(StreamKey::Flag(false)) => false,
            Some(StreamKey::Mode(m)) if m == "sse" => true,
            Some(_) => return Err(AgentSetupError::HttpStream),
        };
        let http = AgentConfig::Http {
            url,
            headers: self.headers,
            timeout: self.timeout,
            retries: self.retries,
            format: self.format.unwrap_or_default(),
            body: self.body,
            reply: self.reply.map(Box::new),
            session: self.session.map(Box::new),
            sse,
        };
        // Checked here, at load, so that a bad placeholder or path names its table.
        wire(&http)?;
        Ok(http)
    }

    /// `type = "langgraph"`: a server's URL and the assistant to run.
    fn check_langgraph(self) -> Result<AgentConfig, AgentSetupError> {
        let url = self.url.ok_or(AgentSetupError::NoUrl)?;
        let assistant_id = self.assistant_id.ok_or(AgentSetupError::NoAssistantId)?;
        Ok(AgentConfig::LangGraph(LangGraphAgentConfig {
            url,
            assistant_id,
            headers: self.headers,
            config: self.config,
            context: self.context,
            stream: match self.stream {
                None => false,
                Some(StreamKey::Flag(on)) => on,
                Some(StreamKey::Mode(_)) => return Err(AgentSetupError::LangGraphStream),
            },
            timeout: self.timeout,
            retries: self.retries,
        }))
    }

    /// `type = "eliza"`: a server's URL and the agent to talk to.
    fn check_eliza(self) -> Result<AgentConfig, AgentSetupError> {
        let url = self.url.ok_or(AgentSetupError::NoUrl)?;
        let agent_id = self.agent_id.ok_or(AgentSetupError::NoElizaAgent)?;
        Ok(AgentConfig::Eliza(ElizaAgentConfig {
            url,
            agent_id,
            headers: self.headers,
            stream: match self.stream {
                None => false,
                Some(StreamKey::Flag(on)) => on,
                Some(StreamKey::Mode(_)) => return Err(AgentSetupError::ElizaStream),
            },
            timeout: self.timeout,
            retries: self.retries,
        }))
    }

    /// `type = "openai"`: an LLM called directly, with its system prompt and tools.
    fn check_openai(self) -> Result<AgentConfig, AgentSetupError> {
        if self.system.is_some() && self.system_file.is_some() {
            return Err(AgentSetupError::SystemTwice);
        }
        if self.tools.is_some() && self.tools_file.is_some() {
            return Err(AgentSetupError::ToolsTwice);
        }
        if self.max_tool_rounds == Some(0) {
            return Err(AgentSetupError::ZeroToolRounds);
        }
        Ok(AgentConfig::OpenAi(OpenAiAgentConfig {
            llm: self.llm,
            model: self.model,
            system: self.system,
            system_file: self.system_file,
            tools: self.tools.unwrap_or_default(),
            tools_file: self.tools_file,
            tools_url: self.tools_url,
            max_tool_rounds: self.max_tool_rounds,
            mocks: self.mocks.unwrap_or_default(),
        }))
    }
}

/// An agent kind's name and the keys its table may hold.
fn allowed_keys(kind: &AgentKind) -> (&'static str, &'static [&'static str]) {
    match kind {
        AgentKind::Process => ("process", &["command", "cwd", "env", "timeout"]),
        AgentKind::Http => (
            "http",
            &[
                "url", "headers", "timeout", "retries", "format", "body", "reply", "session",
                "stream",
            ],
        ),
        AgentKind::OpenAi => (
            "openai",
            &[
                "llm",
                "model",
                "system",
                "system_file",
                "tools",
                "tools_file",
                "tools_url",
                "max_tool_rounds",
                "mocks",
            ],
        ),
        AgentKind::LangGraph => (
            "langgraph",
            &[
                "url",
                "assistant_id",
                "headers",
                "config",
                "context",
                "stream",
                "timeout",
                "retries",
            ],
        ),
        AgentKind::A2a => (
            "a2a",
            &[
                "url",
                "card",
                "binding",
                "version",
                "headers",
                "stream",
                "timeout",
                "retries",
                "allow_card_redirect",
            ],
        ),
        AgentKind::Eliza => (
            "eliza",
            &["url", "agent_id", "headers", "stream", "timeout", "retries"],
        ),
    }
}

impl RawAgent {
    fn check_a2a(self) -> Result<AgentConfig, AgentSetupError> {
        if self.url.is_none() && self.card.is_none() {
            return Err(AgentSetupError::A2aNoUrl);
        }
        let stream = match self.stream {
            None => false,
            Some(StreamKey::Flag(on)) => on,
            Some(StreamKey::Mode(_)) => return Err(AgentSetupError::A2aStream),
        };
        let binding = self
            .binding
            .map(|b| {
                A2aBinding::parse(&b).ok_or(AgentSetupError::A2aKey {
                    key: "binding",
                    expected: "\"jsonrpc\" or \"http+json\" (\"rest\")",
                    got: b,
                })
            })
            .transpose()?;
        let version = self
            .version
            .map(|v| {
                A2aVersion::parse(&v).ok_or(AgentSetupError::A2aKey {
                    key: "version",
                    expected: "\"1.0\" or \"0.3\"",
                    got: v,
                })
            })
            .transpose()?;
        Ok(AgentConfig::A2a(A2aAgentConfig {
            url: self.url,
            card: self.card,
            binding,
            version,
            headers: self.headers,
            timeout: self.timeout,
            retries: self.retries,
            allow_card_redirect: self.allow_card_redirect.unwrap_or(false),
            stream,
        }))
    }
}
