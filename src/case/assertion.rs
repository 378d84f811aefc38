//! Assertions: what a reply must satisfy, compiled when the suite is loaded (regexes
//! and JSONPaths fail at load time, not mid-run). [`crate::source`] reads them and
//! [`crate::check`] evaluates them.

use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

/// One compiled assertion.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// What is checked.
    pub kind: Kind,
    /// Inverts the verdict.
    pub negate: bool,
    /// Custom failure text, shown instead of the generated one.
    pub message: Option<String>,
    /// The assertion as written, echoed into reports.
    pub raw: crate::case::Raw,
}

impl Assertion {
    /// The `type` as written (`contains`, `json_path`, ...).
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }

    /// True when evaluating it needs a judge.
    pub fn needs_judge(&self) -> bool {
        matches!(self.kind, Kind::Judge { .. })
    }
}

/// A JSONPath compiled once, with the text the user wrote.
#[derive(Debug, Clone)]
pub struct JsonPath {
    /// As written in the test file.
    pub text: String,
    pub(crate) query: Arc<jsonpath_rust::parser::model::JpQuery>,
}

/// The JSON types the `type` assertion knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    /// A JSON string.
    String,
    /// A JSON number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A JSON array.
    Array,
    /// A JSON object.
    Object,
    /// `null`.
    Null,
}

impl JsonType {
    pub(crate) const NAMES: [&'static str; 6] =
        ["string", "number", "boolean", "array", "object", "null"];

    pub(crate) fn of(v: &Value) -> JsonType {
        match v {
            Value::String(_) => JsonType::String,
            Value::Number(_) => JsonType::Number,
            Value::Bool(_) => JsonType::Boolean,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
            Value::Null => JsonType::Null,
        }
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
            JsonType::Array => "array",
            JsonType::Object => "object",
            JsonType::Null => "null",
        }
    }
}

/// How `tool_result` and tool-argument matching compare an expected value.
#[derive(Debug, Clone)]
pub enum ValueMatcher {
    /// Subset match: objects by their given keys, arrays element by element.
    Subset(Value),
    /// A string that began with `regex:`.
    Pattern(Regex),
    /// An object whose values are matchers in turn.
    Object(Vec<(String, ValueMatcher)>),
}

/// What a judge assertion asks.
#[derive(Debug, Clone)]
pub struct JudgeSpec {
    /// Who judges (`use`): none named means the run's default judge.
    pub judges: crate::case::JudgeChoice,
    /// What the reply must satisfy.
    pub criteria: String,
    /// The rest of `options.metadata` / `metadata`.
    pub metadata: serde_json::Map<String, Value>,
    /// `llm_judge`'s `expected`.
    pub expected: Option<Value>,
    /// `llm_judge`'s `capabilities`.
    pub capabilities: Vec<String>,
    /// `llm_judge`'s `json_schema`.
    pub json_schema: Option<Value>,
    /// The built-in judge's model settings for this assertion (`llm`, `model`,
    /// `temperature`, `max_tokens`, `seed`).
    pub model: crate::case::ModelSettings,
}

/// The assertion types.
#[derive(Debug, Clone)]
pub enum Kind {
    /// `contains`: the reply text contains `value`.
    Contains {
        /// The substring.
        value: String,
        /// Case-sensitive unless `case_sensitive: false`.
        case_sensitive: bool,
    },
    /// `not_contains`: the reply text does not contain `value`.
    NotContains {
        /// The substring.
        value: String,
        /// Case-sensitive unless `case_sensitive: false`.
        case_sensitive: bool,
    },
    /// `equals`: JSON equality, object key order ignored.
    Equals {
        /// The expected value.
        value: Value,
    },
    /// `regex`: an unanchored match on the reply text.
    Regex {
        /// The compiled pattern.
        regex: Regex,
    },
    /// `json_path`: the value a JSONPath selects.
    JsonPath {
        /// The path.
        path: JsonPath,
        /// The expected value (an array against a scalar means "one of").
        value: Value,
    },
    /// `type`: the JSON type of the reply or of a path in it.
    Type {
        /// The expected type.
        expected: JsonType,
        /// Optional path into the structured reply.
        path: Option<JsonPath>,
    },
    /// `tool_called`: the agent called a tool.
    ToolCalled {
        /// Any of these names; empty means any tool at all.
        names: Vec<String>,
        /// Arguments matched as a subset.
        arguments: Option<ValueMatcher>,
    },
    /// `tool_result`: a tool call's result.
    ToolResult {
        /// The tool name.
        tool: String,
        /// The expected result, matched as a subset.
        result: ValueMatcher,
    },
    /// `tool_sequence`: the tools called, in order.
    ToolSequence {
        /// The tool names, in order.
        names: Vec<String>,
        /// Exactly this sequence (`strict: true`), or these in this order among others.
        strict: bool,
        /// The turn's calls, or the whole conversation's.
        scope: ToolScope,
    },
    /// `tool_count`: how many times a tool (or any tool) was called.
    ToolCount {
        /// The tool; none counts every call.
        name: Option<String>,
        /// At least this many.
        min: Option<u64>,
        /// At most this many.
        max: Option<u64>,
        /// The turn's calls, or the whole conversation's.
        scope: ToolScope,
    },
    /// `span`: the turn's spans (read from the agent's traces) hold matching ones.
    Span {
        /// The span name matches this regex.
        name: Option<Regex>,
        /// The span's attributes hold these (a subset).
        attributes: Option<Value>,
        /// The span's status: `ok`, `error` or `unset`.
        status: Option<SpanStatusWanted>,
        /// The span took at most this long.
        max_duration_ms: Option<u64>,
        /// How many spans must match: exactly, or within bounds (default at least 1).
        count: SpanCount,
    },
    /// `script`: an external command or a registered Rust function decides.
    Script {
        /// The script name (after `scripts:`).
        name: String,
    },
    /// `latency`: how long the agent took. On a turn it bounds that turn's reply; in
    /// final assertions, every reply of the conversation (the slowest one).
    Latency {
        /// `max_ms`: the most the whole reply may take, in milliseconds.
        max_ms: Option<u64>,
        /// `max_first_token_ms`: the most its first byte (or token) may take.
        max_first_token_ms: Option<u64>,
    },
    /// `agent` / `llm_judge`: a judge (a model, or an agent) decides.
    Judge {
        /// The type as written.
        type_name: &'static str,
        /// What the judge is asked.
        spec: Box<JudgeSpec>,
    },
}

impl Kind {
    /// The `type` as written.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Contains { .. } => "contains",
            Kind::NotContains { .. } => "not_contains",
            Kind::Equals { .. } => "equals",
            Kind::Regex { .. } => "regex",
            Kind::JsonPath { .. } => "json_path",
            Kind::Type { .. } => "type",
            Kind::ToolCalled { .. } => "tool_called",
            Kind::ToolResult { .. } => "tool_result",
            Kind::ToolSequence { .. } => "tool_sequence",
            Kind::ToolCount { .. } => "tool_count",
            Kind::Span { .. } => "span",
            Kind::Script { .. } => "script",
            Kind::Latency { .. } => "latency",
            Kind::Judge { type_name, .. } => type_name,
        }
    }
}

/// The status a `span` assertion asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanStatusWanted {
    /// `STATUS_CODE_OK`.
    Ok,
    /// `STATUS_CODE_ERROR`.
    Error,
    /// Neither.
    Unset,
}

/// How many spans a `span` assertion wants to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanCount {
    /// At least this many (1 unless `count` or `min_count` says).
    pub min: u64,
    /// At most this many.
    pub max: Option<u64>,
}

/// Which tool calls a tool assertion counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolScope {
    /// The reply's own calls (default).
    #[default]
    Turn,
    /// Every call of the conversation so far, the reply's included.
    Conversation,
}

/// Every assertion type the parser accepts.
pub(crate) const ASSERTION_TYPES: [&str; 15] = [
    "contains",
    "not_contains",
    "equals",
    "regex",
    "json_path",
    "type",
    "tool_called",
    "tool_result",
    "tool_sequence",
    "tool_count",
    "span",
    "script",
    "latency",
    "agent",
    "llm_judge",
];
