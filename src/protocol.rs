//! The agent protocol: the request every agent kind receives and the reply it must give.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::util::value_text;

/// The most one agent reply may take: a process agent's reply line, an HTTP agent's
/// response body. Beyond it the turn is an error rather than unbounded memory.
pub(crate) const MAX_REPLY_BYTES: usize = 32 << 20;

/// The error for a reply over [`MAX_REPLY_BYTES`].
pub(crate) fn reply_too_large() -> String {
    format!("agent reply exceeds {} MiB", MAX_REPLY_BYTES >> 20)
}

/// What an agent receives for one turn; the same for process, HTTP and in-process agents.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct Request {
    /// One id per conversation (per case run).
    pub session_id: String,
    /// The case id.
    pub test_id: String,
    /// 1-based turn number.
    pub turn: u32,
    /// The new user message's text.
    pub input: String,
    /// The whole history, ending with the new user message.
    pub messages: Vec<Message>,
    /// The case's `options` (merged with the turn's), passed as is.
    #[serde(default)]
    pub options: Value,
    /// The case's `metadata`, plus Yao's `user` and `team` when given.
    #[serde(default)]
    pub metadata: Value,
    /// The turn's attachments, when it has any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Value>,
    /// An ElizaOS scenario's `setup` (its `mocks`), for agents that honour them; `openai`
    /// agents have their tool calls answered by these mocks without being told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Value>,
}

/// One tool call the agent made during a turn.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments (an object, or a string holding JSON, as models emit them).
    #[serde(default, alias = "args")]
    pub arguments: Value,
    /// The tool's result, when the agent reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The tool's error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Where agentest learned of the call when the reply did not list it: `"trace"`, a
    /// span the agent exported (see docs/traces.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl ToolCall {
    /// A call of `name` with `arguments`, with no result yet.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            name: name.into(),
            arguments,
            result: None,
            error: None,
            source: None,
        }
    }

    /// Sets the tool's result.
    pub fn with_result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }

    /// Sets the tool's error.
    pub fn with_error(mut self, error: Value) -> Self {
        self.error = Some(error);
        self
    }

    /// The arguments as JSON, parsing string-encoded JSON first.
    pub fn arguments_json(&self) -> Value {
        match &self.arguments {
            Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| self.arguments.clone()),
            other => other.clone(),
        }
    }
}

/// Token usage an agent reports.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

/// What an agent answers for one turn. Build one with [`Reply::text`] or
/// [`Reply::json`] and the `with_` methods.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// The reply text (or any JSON an agent answers with).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub content: Value,
    /// Tools called while producing the reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The agent says it waits for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting_input: Option<bool>,
    /// What the agent expects the user to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_hint: Option<String>,
    /// Structured output, the subject of `json_path` assertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The reply was cut off at a token limit (a model's `finish_reason: "length"`): it
    /// is incomplete, and never counts as the agent finishing the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Steps the agent took that are not tool calls (ElizaOS actions such as
    /// `REPLY` or `CREATE_ISSUE`), for `trajectory_contains_action`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// What the agent said it thought before answering (an ElizaOS reply's `thought`):
    /// kept in the turn's record, never checked as the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// Files the reply carried (A2A file parts): listed in the turn's record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileRef>,
    /// Whether the agent's traces were read for this turn.
    #[serde(skip)]
    pub(crate) traced: bool,
    /// The spans the agent exported for this turn (when its traces are read), as a tree.
    #[serde(skip)]
    pub(crate) spans: Vec<SpanNode>,
    /// A short text of those spans, for a judge's prompt.
    #[serde(skip)]
    pub(crate) trace_summary: Option<String>,
    /// Spans of the turn not kept (over the limits).
    #[serde(skip)]
    pub(crate) spans_omitted: u64,
    /// Whether the spans had not settled when `[traces] settle_max` ran out.
    #[serde(skip)]
    pub(crate) spans_incomplete: bool,
    /// Whether `usage` was read from the agent's model spans rather than reported.
    #[serde(skip)]
    pub(crate) usage_traced: bool,
}

/// What a span of a turn's record stands for, as agentest read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SpanRole {
    /// A tool the agent ran.
    Tool,
    /// A call to a model.
    Model,
    /// Anything else (an agent, a chain, an HTTP request).
    #[default]
    Other,
}

impl SpanRole {
    fn is_other(&self) -> bool {
        *self == SpanRole::Other
    }
}

/// One span of a turn's record: the spans an agent exported for the turn (when its
/// traces are read), as a tree, with the attributes agentest read from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpanNode {
    /// The span's name.
    pub name: String,
    /// The OTLP span kind (`internal`, `server`, `client`, `producer`, `consumer`);
    /// empty when unspecified.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Milliseconds from the turn's earliest span start to this span's start.
    pub start_ms: u64,
    /// How long the span took, in milliseconds.
    pub duration_ms: u64,
    /// `"ok"`, or `"error: <message>"` (`"error"` without one); absent when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The attributes read for tool calls and model usage, and those asked for with
    /// `[traces] keep_attributes`; long values clipped.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
    /// What the span stands for: a tool, a model call, or neither (omitted).
    #[serde(default, skip_serializing_if = "SpanRole::is_other")]
    pub role: SpanRole,
    /// Which tool or model, as the reports show it (`tool get_weather`, `model gpt-4o
    /// tokens 12/5`); empty when the span says none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Child spans in start order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SpanNode>,
}

/// A file an agent's reply carried, as its turn's record lists it: what it is and
/// where it is, never its bytes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileRef {
    /// Its file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its media type (`image/png`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Where it is, for a file sent by reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Its size in bytes, for a file sent inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The artifact it came in (A2A), when it had a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
}

impl Reply {
    /// A reply with text content.
    pub fn text(content: impl Into<String>) -> Self {
        Reply {
            content: Value::String(content.into()),
            ..Reply::default()
        }
    }

    /// A reply whose content is any JSON value (`null` for none).
    pub fn json(content: Value) -> Self {
        Reply {
            content,
            ..Reply::default()
        }
    }

    /// Adds a tool call.
    pub fn with_tool_call(
        mut self,
        name: impl Into<String>,
        arguments: Value,
        result: Option<Value>,
    ) -> Self {
        self.tool_calls.push(ToolCall {
            name: name.into(),
            arguments,
            result,
            error: None,
            source: None,
        });
        self
    }

    /// Adds a tool call built with [`ToolCall::new`].
    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Says whether the agent waits for the user.
    pub fn awaiting_input(mut self, awaiting: bool) -> Self {
        self.awaiting_input = Some(awaiting);
        self
    }

    /// What the agent expects the user to say.
    pub fn with_input_hint(mut self, hint: impl Into<String>) -> Self {
        self.input_hint = Some(hint.into());
        self
    }

    /// Reports token usage.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
        });
        self
    }

    /// Sets structured data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The reply's text: the content as text, or the data's JSON text when there is no content.
    pub fn output_text(&self) -> String {
        match (&self.content, &self.data) {
            (Value::Null, Some(d)) => d.to_string(),
            (c, _) => value_text(c),
        }
    }

    /// The reply's value: the content, or the data when there is no content.
    pub fn output_value(&self) -> Value {
        match (&self.content, &self.data) {
            (Value::Null, Some(d)) => d.clone(),
            (c, _) => c.clone(),
        }
    }

    /// The assistant message this reply adds to the history.
    pub fn to_message(&self) -> Message {
        Message::assistant(
            self.content.clone(),
            if self.tool_calls.is_empty() {
                None
            } else {
                serde_json::to_value(&self.tool_calls).ok()
            },
        )
    }

    /// Reads a reply from JSON, checking the contract; the error says what was wrong.
    pub fn from_json(v: Value) -> Result<Reply, String> {
        let Value::Object(obj) = &v else {
            return Err(format!(
                "the reply must be a JSON object like {{\"content\": \"...\"}}, got {}",
                crate::util::type_of(&v)
            ));
        };
        check_reply_shape(obj)?;
        let reply: Reply = serde_json::from_value(v)
            .map_err(|e| format!("the reply does not fit the protocol: {e}"))?;
        if reply.content.is_null() && reply.tool_calls.is_empty() && reply.data.is_none() {
            return Err(
                "the reply has none of `content`, `tool_calls` or `data`; an agent must answer with at least one"
                    .into(),
            );
        }
        Ok(reply)
    }
}

fn check_reply_shape(obj: &Map<String, Value>) -> Result<(), String> {
    if let Some(tc) = obj.get("tool_calls") {
        match tc {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item.get("name") {
                        Some(Value::String(_)) => {}
                        Some(_) => return Err(format!("`tool_calls[{i}].name` must be a string")),
                        None => {
                            return Err(format!(
                                "`tool_calls[{i}].name` is missing; every tool call needs a name"
                            ))
                        }
                    }
                }
            }
            _ => {
                return Err(
                    "`tool_calls` must be an array of {\"name\", \"arguments\"} objects".into(),
                )
            }
        }
    }
    if let Some(a) = obj.get("awaiting_input") {
        if !a.is_boolean() && !a.is_null() {
            return Err("`awaiting_input` must be true or false".into());
        }
    }
    if let Some(u) = obj.get("usage") {
        if !u.is_object() && !u.is_null() {
            return Err("`usage` must be an object {\"input_tokens\", \"output_tokens\"}".into());
        }
        for field in ["input_tokens", "output_tokens"] {
            match u.get(field) {
                None | Some(Value::Null) => {}
                Some(n) if n.is_u64() => {}
                Some(other) => {
                    return Err(format!(
                        "`usage.{field}` must be a whole number of tokens, 0 or more (got {other}); report the count the model gave, or leave `usage` out"
                    ))
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_the_contract_and_names_what_breaks_it() {
        let r = Reply::from_json(
            json!({"content": "hi", "tool_calls": [{"name": "t", "args": {"a": 1}}]}),
        )
        .unwrap();
        assert_eq!(r.tool_calls[0].arguments, json!({"a": 1}));
        assert!(Reply::from_json(json!({})).unwrap_err().contains("none of"));
        assert!(Reply::from_json(json!([1]))
            .unwrap_err()
            .contains("JSON object"));
        assert!(Reply::from_json(json!({"tool_calls": [{}]}))
            .unwrap_err()
            .contains("tool_calls[0].name"));
        assert!(
            Reply::from_json(json!({"content": "x", "awaiting_input": "yes"}))
                .unwrap_err()
                .contains("awaiting_input")
        );
        assert_eq!(
            Reply::from_json(json!({"content": "x", "usage": {"input_tokens": -5}})).unwrap_err(),
            "`usage.input_tokens` must be a whole number of tokens, 0 or more (got -5); report the count the model gave, or leave `usage` out"
        );
    }

    #[test]
    fn string_arguments_are_parsed() {
        let t = ToolCall {
            name: "x".into(),
            arguments: json!("{\"a\":1}"),
            result: None,
            error: None,
            source: None,
        };
        assert_eq!(t.arguments_json(), json!({"a": 1}));
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// The text (or, for structured agents, any JSON value).
    #[serde(default)]
    pub content: Value,
    /// Tool calls an assistant message made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
    /// The participant's name (a tool message: the tool that answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tool message: the id of the tool call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message: instructions.
    pub fn system(text: impl Into<String>) -> Self {
        Message {
            role: "system".into(),
            content: Value::String(text.into()),
            tool_calls: None,
            name: None,
            tool_call_id: None,
        }
    }

    /// A user message with text content.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: "user".into(),
            content: Value::String(text.into()),
            tool_calls: None,
            name: None,
            tool_call_id: None,
        }
    }

    /// An assistant message: the reply's content and the tool calls it made, if any.
    /// Build assistant messages with this rather than a struct literal, so that new
    /// optional fields on `Message` do not break the callers.
    pub fn assistant(content: Value, tool_calls: Option<Value>) -> Self {
        Message {
            role: "assistant".into(),
            content,
            tool_calls,
            name: None,
            tool_call_id: None,
        }
    }

    /// The content as text: strings as they are, other JSON as its compact text.
    pub fn text(&self) -> String {
        value_text(&self.content)
    }
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
    /// Of the prompt tokens, those the provider served from its prompt cache
    /// (`prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl TokenUsage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
    }

    /// Input and output tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}
