//! What one turn's spans become: the tool calls the agent ran, the model calls it made
//! (tokens by model), and a compact span tree for the turn record and a judge's prompt.
//!
//! Frameworks name the same facts differently, so every figure is read with a fallback
//! order across the conventions in use: the OpenTelemetry GenAI semantic conventions
//! (pydantic-ai, Google ADK, OpenLLMetry's newer spans), OpenInference (Arize; the
//! LangChain/LangGraph, OpenAI Agents and other instrumentations), OpenLLMetry/traceloop,
//! and ADK's own `gcp.vertex.agent.*` attributes. Where an instrumentation writes a value
//! in an envelope of its own (OpenLLMetry's LangChain callback, a serialized LangChain
//! `ToolMessage`, ADK's `{"result": …}`), the envelope is taken off, so a tool's arguments
//! and result read the same whichever framework ran it.
//!
//! Pure: spans in, figures out; no clock, no I/O.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::span::{Span, SpanId, SpanKind, SpanStatus, TraceId};
use crate::protocol::{SpanNode, SpanRole, ToolCall};

/// The default cap on spans kept in one turn's tree.
pub(crate) const DEFAULT_MAX_SPANS: usize = 500;

/// The default cap on attribute text (keys and values) kept in one turn's tree.
pub(crate) const DEFAULT_MAX_BYTES: usize = 64 * 1024;

/// The longest one attribute value (or status message) is kept in the tree; longer ones
/// are clipped with a marker saying how much was cut.
const VALUE_CLIP: usize = 1024;

/// The deepest the tree goes: spans further down hang, flattened in start order, from
/// their ancestor at this depth, so the turn record stays readable by JSON parsers with
/// a nesting limit (serde_json stops at 128).
const MAX_DEPTH: usize = 32;

/// The size [`summary`] aims to stay under.
const SUMMARY_BYTES: usize = 1024;

/// How [`read`] builds the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadOptions {
    /// Attributes kept in the tree besides the ones [`read`] itself reads: exact names,
    /// or a prefix ending in `*` (`"app.*"`).
    pub(crate) keep_attributes: Vec<String>,
    /// The most spans the tree holds; tool and model spans are kept first.
    pub(crate) max_spans: usize,
    /// The most attribute text (keys and values, in bytes) the tree holds.
    pub(crate) max_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            keep_attributes: Vec::new(),
            max_spans: DEFAULT_MAX_SPANS,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// What one turn's spans say.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Traced {
    /// The tools the agent ran, in the order they started.
    pub(crate) tool_calls: Vec<TracedCall>,
    /// The model calls the agent made, in the order they started; wrapper spans and
    /// agent-level aggregates are not counted again.
    pub(crate) usage: Vec<ModelUsage>,
    /// The spans as a tree, roots in start order.
    pub(crate) tree: Vec<SpanNode>,
    /// What the caps left out: spans not in the tree, and attribute values dropped once
    /// the attribute budget was spent.
    pub(crate) omitted: u64,
}

/// One tool call read from a tool span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TracedCall {
    /// The tool's name.
    pub(crate) name: String,
    /// The arguments: an object when the span (or the model call that asked for the
    /// tool) gives them as one, else the bare value; `null` when no span says.
    #[serde(default)]
    pub(crate) arguments: Value,
    /// What the tool returned (a JSON text parsed, a plain string kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Value>,
    /// Why the tool failed, when its span ended in error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The model's id for the call, to match it with the reply's own tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) call_id: Option<String>,
}

impl TracedCall {
    /// The call as the agent protocol's [`ToolCall`] (the error as a JSON string).
    pub(crate) fn to_tool_call(&self) -> ToolCall {
        ToolCall {
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            result: self.result.clone(),
            error: self.error.clone().map(Value::String),
            source: Some("trace".into()),
        }
    }
}

/// One model call read from a model span.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ModelUsage {
    /// The model that answered (else the one asked for), when the span names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<String>,
    /// Prompt tokens (0 when the span does not say).
    #[serde(default)]
    pub(crate) input_tokens: u64,
    /// Completion tokens (0 when the span does not say).
    #[serde(default)]
    pub(crate) output_tokens: u64,
}

// ---------------------------------------------------------------------------------------
// The names read, in fallback order.

const OPERATION: &str = "gen_ai.operation.name";
const OPENINFERENCE_KIND: &str = "openinference.span.kind";
const TRACELOOP_KIND: &str = "traceloop.span.kind";
/// OpenLLMetry's older marker of a model span (`chat`, `completion`).
const LLM_REQUEST_TYPE: &str = "llm.request.type";

const TOOL_NAME: [&str; 3] = ["gen_ai.tool.name", "tool.name", "traceloop.entity.name"];

/// `tool_arguments` / `tool_response` are pydantic-ai's names before its instrumentation
/// version 3 (`InstrumentationConfig.for_version(2)` in pydantic_ai/_instrumentation.py).
const TOOL_ARGUMENTS: [&str; 5] = [
    "gen_ai.tool.call.arguments",
    "tool_arguments",
    "input.value",
    "gcp.vertex.agent.tool_call_args",
    "traceloop.entity.input",
];
const TOOL_RESULT: [&str; 5] = [
    "gen_ai.tool.call.result",
    "tool_response",
    "output.value",
    "gcp.vertex.agent.tool_response",
    "traceloop.entity.output",
];
const ADK_TOOL_RESPONSE: &str = "gcp.vertex.agent.tool_response";
/// `tool.id` is OpenInference's "identifier for the result of the tool call".
const TOOL_CALL_ID: [&str; 3] = ["gen_ai.tool.call.id", "tool_call.id", "tool.id"];

const MODEL: [&str; 3] = [
    "gen_ai.response.model",
    "gen_ai.request.model",
    "llm.model_name",
];
const INPUT_TOKENS: [&str; 3] = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
];
const OUTPUT_TOKENS: [&str; 3] = [
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
];
const ERROR_TYPE: &str = "error.type";
/// The GenAI semconv's chat history on a model span (JSON), read for the tool calls a
/// model asked for when a tool span lacks its arguments.
const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";

/// Whether the tree keeps an attribute without being asked: one read above, or one
/// that says what a span is.
fn read_here(key: &str) -> bool {
    let single = [
        OPERATION,
        OPENINFERENCE_KIND,
        TRACELOOP_KIND,
        LLM_REQUEST_TYPE,
        ERROR_TYPE,
    ];
    let lists: [&[&str]; 7] = [
        &TOOL_NAME,
        &TOOL_ARGUMENTS,
        &TOOL_RESULT,
        &TOOL_CALL_ID,
        &MODEL,
        &INPUT_TOKENS,
        &OUTPUT_TOKENS,
    ];
    single.contains(&key) || lists.iter().any(|keys| keys.contains(&key))
}

/// What a span stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Tool,
    Model,
    Other,
}

fn attr_str<'a>(attributes: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    attributes.get(key).and_then(Value::as_str)
}

/// Tool spans: `execute_tool` (GenAI semconv), OpenInference `TOOL`, traceloop `tool`,
/// and pydantic-ai before instrumentation version 3, whose tool spans (`running tool`)
/// carry `gen_ai.tool.name` but no operation name. Model spans: `chat`,
/// `generate_content`, `text_completion`, OpenInference `LLM`, traceloop `llm`,
/// OpenLLMetry's `llm.request.type`, ADK's `call_llm`, and a span named `chat …` that says
/// no operation. Agent and chain spans (`invoke_agent`, `AGENT`, `CHAIN`, workflows) are
/// neither, so their aggregate figures are never added.
fn role(name: &str, attributes: &Map<String, Value>) -> Role {
    let operation = attr_str(attributes, OPERATION);
    let openinference = attr_str(attributes, OPENINFERENCE_KIND);
    let traceloop = attr_str(attributes, TRACELOOP_KIND);
    let is =
        |value: Option<&str>, wanted: &str| value.is_some_and(|v| v.eq_ignore_ascii_case(wanted));
    if is(operation, "execute_tool")
        || is(openinference, "TOOL")
        || is(traceloop, "tool")
        || (operation.is_none()
            && (attributes.contains_key(TOOL_NAME[0]) || name.starts_with("execute_tool ")))
    {
        return Role::Tool;
    }
    let model_operation = operation.is_some_and(|op| {
        ["chat", "generate_content", "text_completion"]
            .iter()
            .any(|m| op.eq_ignore_ascii_case(m))
    });
    let model_request = attr_str(attributes, LLM_REQUEST_TYPE)
        .is_some_and(|t| t.eq_ignore_ascii_case("chat") || t.eq_ignore_ascii_case("completion"));
    if model_operation
        || is(openinference, "LLM")
        || is(traceloop, "llm")
        || (operation.is_none() && openinference.is_none() && model_request)
        || (operation.is_none() && (name == "call_llm" || name.starts_with("chat ")))
    {
        return Role::Model;
    }
    Role::Other
}

fn first_value<'a>(
    attributes: &'a Map<String, Value>,
    keys: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    keys.iter().find_map(|key| {
        attributes
            .get(*key)
            .filter(|v| !v.is_null())
            .map(|v| (*key, v))
    })
}

fn first_text(span: &Span, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|key| span.text(key).filter(|t| !t.trim().is_empty()))
}

fn first_count(span: &Span, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|key| span.count(key))
}

/// A value as JSON when it is a JSON text, else as it is.
fn parsed(value: &Value) -> Value {
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.is_empty() {
                return value.clone();
            }
            serde_json::from_str(trimmed).unwrap_or_else(|_| value.clone())
        }
        other => other.clone(),
    }
}

/// A call id, or none for ADK's placeholder and empty ids.
fn real_id(id: &str) -> Option<String> {
    let id = id.trim();
    (!id.is_empty() && id != "<not specified>").then(|| id.to_string())
}

fn id_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => real_id(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The arguments out of an instrumentation's envelope.
///
/// OpenLLMetry's LangChain callback writes `{"input_str", "tags", "metadata", "inputs",
/// "kwargs"}` (`on_tool_start` in opentelemetry/instrumentation/langchain/
/// callback_handler.py), with the arguments under `inputs` and the call id under
/// `kwargs.tool_call_id`; traceloop's `@tool` decorator writes `{"args", "kwargs"}`
/// (`_handle_span_input` in traceloop/sdk/decorators/base.py).
fn unwrap_arguments(value: Value) -> (Value, Option<String>) {
    let Value::Object(object) = &value else {
        return (value, None);
    };
    if object.contains_key("input_str") && object.contains_key("inputs") {
        let id = object
            .get("kwargs")
            .and_then(|kwargs| id_of(kwargs.get("tool_call_id")));
        let arguments = match object.get("inputs") {
            Some(inputs) if !inputs.is_null() => inputs.clone(),
            _ => object.get("input_str").map(parsed).unwrap_or(Value::Null),
        };
        return (arguments, id);
    }
    let decorator = object.len() == 2
        && matches!(object.get("args"), Some(Value::Array(_)))
        && matches!(object.get("kwargs"), Some(Value::Object(_)));
    if decorator && object["args"].as_array().is_some_and(Vec::is_empty) {
        return (object["kwargs"].clone(), None);
    }
    (value, None)
}

/// What a tool result holds once envelopes are off.
struct Outcome {
    result: Value,
    call_id: Option<String>,
    /// The result is a tool message that says the tool failed.
    failed: bool,
}

/// A result out of its envelopes: OpenLLMetry's `{"output", "kwargs"}` (`on_tool_end`),
/// and a serialized LangChain `ToolMessage` in any of the shapes instrumentations write
/// it: `{"type": "tool", "data": {…}}` (`message_to_dict`, OpenInference), `{"lc": 1,
/// "kwargs": {…}}` (`to_json`, OpenLLMetry), or the bare fields (`model_dump`). The
/// message's `content` is the result and its `tool_call_id` the call's id.
fn unwrap_result(value: Value, adk: bool) -> Outcome {
    let mut value = value;
    if let Value::Object(object) = &value {
        if object.len() == 2 && object.contains_key("output") && object.contains_key("kwargs") {
            value = object["output"].clone();
        }
    }
    let message = match &value {
        Value::Object(object) => tool_message(object),
        _ => None,
    };
    if let Some(message) = message {
        let content = message.get("content").map(parsed).unwrap_or(Value::Null);
        return Outcome {
            call_id: id_of(message.get("tool_call_id")),
            failed: message.get("status").and_then(Value::as_str) == Some("error"),
            result: content,
        };
    }
    // ADK wraps a tool's non-object return as `{"result": …}` (`trace_tool_call` in
    // google/adk/telemetry), as it does for the model's function response.
    if adk {
        if let Value::Object(object) = &value {
            if object.len() == 1 && object.contains_key("result") {
                value = object["result"].clone();
            }
        }
    }
    Outcome {
        result: value,
        call_id: None,
        failed: false,
    }
}

fn tool_message(object: &Map<String, Value>) -> Option<&Map<String, Value>> {
    let is_tool = |fields: &Map<String, Value>| {
        fields.contains_key("tool_call_id")
            || fields.get("type").and_then(Value::as_str) == Some("tool")
    };
    if object.get("lc").is_some() {
        return object
            .get("kwargs")
            .and_then(Value::as_object)
            .filter(|kwargs| is_tool(kwargs));
    }
    if object.get("type").and_then(Value::as_str) == Some("tool") {
        if let Some(data) = object.get("data").and_then(Value::as_object) {
            return Some(data);
        }
    }
    (object.contains_key("tool_call_id") && object.contains_key("content")).then_some(object)
}

/// The message of a failed span: the first line before any Python traceback (LangChain
/// runs record `repr(error)` followed by the traceback).
fn error_text(message: &str) -> String {
    let head = message
        .split("Traceback (most recent call last)")
        .next()
        .unwrap_or_default();
    let line = head
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    clip(line, VALUE_CLIP)
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [clipped {} bytes]", &text[..end], text.len() - end)
}

/// A tool call the model asked for, read off a model span, to give a tool span whose own
/// attributes do not carry them the arguments and the id.
struct Declared {
    start: u64,
    name: Option<String>,
    id: Option<String>,
    arguments: Option<Value>,
    used: bool,
}

/// OpenInference flattens a model's tool calls into
/// `llm.output_messages.<n>.message.tool_calls.<m>.tool_call.{id,function.name,
/// function.arguments}` (spec/tool_calling.md); returns `(n, m, field)`.
fn flattened_tool_call(key: &str) -> Option<(usize, usize, &str)> {
    let rest = key.strip_prefix("llm.output_messages.")?;
    let (message, rest) = rest.split_once('.')?;
    let rest = rest.strip_prefix("message.tool_calls.")?;
    let (call, field) = rest.split_once('.')?;
    let field = field.strip_prefix("tool_call.")?;
    Some((message.parse().ok()?, call.parse().ok()?, field))
}

fn declared_calls(span: &Span) -> Vec<Declared> {
    let mut calls: BTreeMap<(usize, usize), Declared> = BTreeMap::new();
    for (key, value) in &span.attributes {
        let Some((message, call, field)) = flattened_tool_call(key) else {
            continue;
        };
        let entry = calls.entry((message, call)).or_insert_with(|| Declared {
            start: span.start_unix_nano,
            name: None,
            id: None,
            arguments: None,
            used: false,
        });
        match field {
            "id" => entry.id = id_of(Some(value)),
            "function.name" => entry.name = value.as_str().map(str::to_string),
            "function.arguments" => entry.arguments = Some(parsed(value)),
            _ => {}
        }
    }
    if !calls.is_empty() {
        return calls.into_values().collect();
    }
    // The GenAI semconv: `gen_ai.output.messages`, parts of type `tool_call`.
    let Some(messages) = span.attributes.get(OUTPUT_MESSAGES).map(parsed) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for message in messages.as_array().into_iter().flatten() {
        let parts = message.get("parts").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if part.get("type").and_then(Value::as_str) != Some("tool_call") {
                continue;
            }
            found.push(Declared {
                start: span.start_unix_nano,
                name: part.get("name").and_then(Value::as_str).map(str::to_string),
                id: id_of(part.get("id")),
                arguments: part.get("arguments").map(parsed),
                used: false,
            });
        }
    }
    found
}

/// The declared call a tool span ran: by call id, else (for calls without ids) the
/// earliest unused one of the same name asked for before the tool started.
fn take_declared<'a>(
    declared: &'a mut [Declared],
    id: Option<&str>,
    name: &str,
    start: u64,
) -> Option<&'a Declared> {
    let by_id = id.and_then(|id| declared.iter().position(|d| d.id.as_deref() == Some(id)));
    let index = by_id.or_else(|| {
        let candidate = |d: &Declared| {
            !d.used && d.name.as_deref() == Some(name) && (id.is_none() || d.id.is_none())
        };
        declared
            .iter()
            .position(|d| candidate(d) && d.start <= start)
            .or_else(|| declared.iter().position(candidate))
    })?;
    declared[index].used = true;
    Some(&declared[index])
}

/// The turn's spans, deduplicated, in start order, with their parents found.
struct Index<'a> {
    spans: Vec<&'a Span>,
    parent: Vec<Option<usize>>,
    roles: Vec<Role>,
}

impl<'a> Index<'a> {
    fn new(spans: &'a [Span]) -> Self {
        let mut seen = HashSet::new();
        let mut unique: Vec<&Span> = spans
            .iter()
            .filter(|s| seen.insert((s.trace_id, s.span_id)))
            .collect();
        unique.sort_by_key(|s| s.start_unix_nano);
        let position: HashMap<(TraceId, SpanId), usize> = unique
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.trace_id, s.span_id), i))
            .collect();
        let parent = unique
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let parent = position.get(&(s.trace_id, s.parent_span_id?)).copied();
                parent.filter(|&p| p != i)
            })
            .collect();
        let roles = unique
            .iter()
            .map(|s| role(&s.name, &s.attributes))
            .collect();
        Index {
            spans: unique,
            parent,
            roles,
        }
    }

    /// The span's ancestors, nearest first; stops on a cycle of parent ids.
    fn ancestors(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let mut current = index;
        let mut steps = 0;
        std::iter::from_fn(move || {
            steps += 1;
            if steps > self.spans.len() {
                return None;
            }
            current = self.parent[current]?;
            (current != index).then_some(current)
        })
    }
}

/// Reads one turn's spans: the tool calls, the model usage and the span tree.
pub(crate) fn read(spans: &[Span], opts: &ReadOptions) -> Traced {
    let index = Index::new(spans);
    let (tree, omitted) = build_tree(&index, opts);
    Traced {
        tool_calls: tool_calls(&index),
        usage: usage(&index),
        tree,
        omitted,
    }
}

/// A tool call read off its span, before the model's declarations are joined in.
struct Pending {
    call: TracedCall,
    start: u64,
    /// It lacks arguments or an id, or is OpenInference's (whose input may be bare).
    needs: bool,
    openinference: bool,
}

fn tool_calls(index: &Index) -> Vec<TracedCall> {
    // Each call, and whether it needs the model's declaration of it: OpenInference's
    // LangChain TOOL span gives a one-argument tool's bare value as its input, so the
    // model's own arguments, on its LLM span, are the better read; other spans need it
    // only for what they lack.
    let mut calls: Vec<Pending> = index
        .spans
        .iter()
        .zip(&index.roles)
        .filter(|(_, role)| **role == Role::Tool)
        .filter_map(|(span, _)| pending_call(span))
        .collect();
    if calls.iter().any(|p| p.needs) {
        join_declarations(index, &mut calls);
    }
    calls.into_iter().map(|p| p.call).collect()
}

/// The call a tool span records, or `None` for ADK's summary of parallel calls.
fn pending_call(span: &Span) -> Option<Pending> {
    let name = first_text(span, &TOOL_NAME).unwrap_or_else(|| {
        let name = span
            .name
            .strip_prefix("execute_tool ")
            .unwrap_or(&span.name);
        name.trim().to_string()
    });
    // ADK's summary span for parallel calls, each of which has its own span.
    if name == "(merged tools)" {
        return None;
    }
    let (arguments, envelope_id) = match first_value(&span.attributes, &TOOL_ARGUMENTS) {
        Some((_, value)) => unwrap_arguments(parsed(value)),
        None => (Value::Null, None),
    };
    let outcome = first_value(&span.attributes, &TOOL_RESULT)
        .map(|(key, value)| unwrap_result(parsed(value), key == ADK_TOOL_RESPONSE));
    let call_id = first_text(span, &TOOL_CALL_ID)
        .and_then(|id| real_id(&id))
        .or(envelope_id)
        .or_else(|| outcome.as_ref().and_then(|o| o.call_id.clone()));
    let error = match &span.status {
        SpanStatus::Error(message) => Some(
            Some(error_text(message))
                .filter(|m| !m.is_empty())
                .or_else(|| first_text(span, &[ERROR_TYPE]))
                .unwrap_or_else(|| "error".to_string()),
        ),
        _ => outcome
            .as_ref()
            .filter(|o| o.failed)
            .map(|o| match &o.result {
                Value::String(text) => error_text(text),
                other => clip(&other.to_string(), VALUE_CLIP),
            }),
    };
    let openinference = attr_str(&span.attributes, OPENINFERENCE_KIND).is_some();
    let call = TracedCall {
        name,
        arguments,
        result: outcome.map(|o| o.result).filter(|r| !r.is_null()),
        error,
        call_id,
    };
    let needs = openinference || call.arguments.is_null() || call.call_id.is_none();
    Some(Pending {
        call,
        start: span.start_unix_nano,
        needs,
        openinference,
    })
}

/// Completes the calls that need it from the model spans' declarations of them.
fn join_declarations(index: &Index, calls: &mut [Pending]) {
    let mut declared: Vec<Declared> = index
        .spans
        .iter()
        .zip(&index.roles)
        .filter(|(_, role)| **role == Role::Model)
        .flat_map(|(span, _)| declared_calls(span))
        .collect();
    // A declaration whose call a complete span already ran is no one else's.
    for done in calls.iter().filter(|p| !p.needs) {
        for d in declared.iter_mut() {
            if d.id.is_some() && d.id == done.call.call_id {
                d.used = true;
            }
        }
    }
    for pending in calls.iter_mut().filter(|p| p.needs) {
        let call = &mut pending.call;
        let Some(found) = take_declared(
            &mut declared,
            call.call_id.as_deref(),
            &call.name,
            pending.start,
        ) else {
            continue;
        };
        if let Some(arguments) = &found.arguments {
            if pending.openinference || call.arguments.is_null() {
                call.arguments = arguments.clone();
            }
        }
        if call.call_id.is_none() {
            call.call_id.clone_from(&found.id);
        }
    }
}

fn usage(index: &Index) -> Vec<ModelUsage> {
    let count = index.spans.len();
    let has_figures: Vec<bool> = (0..count)
        .map(|i| {
            index.roles[i] == Role::Model
                && (first_count(index.spans[i], &INPUT_TOKENS).is_some()
                    || first_count(index.spans[i], &OUTPUT_TOKENS).is_some())
        })
        .collect();
    // A model span nested in another (a framework's wrapper and the provider's client both
    // instrumented) is one call: the innermost span with figures counts; a span without
    // figures counts only when no model span around it or within it has any.
    let mut figures_below = vec![false; count];
    let mut model_below = vec![false; count];
    for (i, figures) in has_figures.iter().enumerate() {
        if index.roles[i] != Role::Model {
            continue;
        }
        for ancestor in index.ancestors(i) {
            model_below[ancestor] = true;
            figures_below[ancestor] |= figures;
        }
    }
    let counted_with_figures: Vec<bool> = (0..count)
        .map(|i| has_figures[i] && !figures_below[i])
        .collect();
    let mut usage = Vec::new();
    for i in 0..count {
        if index.roles[i] != Role::Model {
            continue;
        }
        let counted = if has_figures[i] {
            counted_with_figures[i]
        } else {
            !model_below[i] && !index.ancestors(i).any(|a| counted_with_figures[a])
        };
        if !counted {
            continue;
        }
        let span = index.spans[i];
        // A wrapper may name the model its inner span leaves out, or the reverse.
        let model = first_text(span, &MODEL).or_else(|| {
            index
                .ancestors(i)
                .filter(|&a| index.roles[a] == Role::Model)
                .find_map(|a| first_text(index.spans[a], &MODEL))
        });
        usage.push(ModelUsage {
            model,
            input_tokens: first_count(span, &INPUT_TOKENS).unwrap_or(0),
            output_tokens: first_count(span, &OUTPUT_TOKENS).unwrap_or(0),
        });
    }
    usage
}

fn kind_name(kind: SpanKind) -> &'static str {
    match kind {
        SpanKind::Unspecified => "",
        SpanKind::Internal => "internal",
        SpanKind::Server => "server",
        SpanKind::Client => "client",
        SpanKind::Producer => "producer",
        SpanKind::Consumer => "consumer",
    }
}

fn wanted(key: &str, keep: &[String]) -> bool {
    read_here(key)
        || keep.iter().any(|k| match k.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => k == key,
        })
}

/// Spends the attribute budget as the tree is built.
struct Budget<'o> {
    opts: &'o ReadOptions,
    left: usize,
    omitted: u64,
}

impl Budget<'_> {
    fn attributes(&mut self, span: &Span) -> Map<String, Value> {
        let mut kept = Map::new();
        for (key, value) in &span.attributes {
            if !wanted(key, &self.opts.keep_attributes) {
                continue;
            }
            let value = match value {
                Value::String(text) if text.len() > VALUE_CLIP => {
                    Value::String(clip(text, VALUE_CLIP))
                }
                Value::Array(_) | Value::Object(_) => {
                    let text = value.to_string();
                    if text.len() > VALUE_CLIP {
                        Value::String(clip(&text, VALUE_CLIP))
                    } else {
                        value.clone()
                    }
                }
                other => other.clone(),
            };
            let cost = key.len()
                + match &value {
                    Value::String(text) => text.len(),
                    other => other.to_string().len(),
                };
            if cost > self.left {
                self.omitted += 1;
                continue;
            }
            self.left -= cost;
            kept.insert(key.clone(), value);
        }
        kept
    }
}

/// Builds the tree: at most `max_spans` spans (tool and model spans first, then the
/// earliest), each under its nearest kept ancestor; spans whose parent is not among the
/// turn's (or whose parent ids loop) are roots.
fn build_tree(index: &Index, opts: &ReadOptions) -> (Vec<SpanNode>, u64) {
    let count = index.spans.len();
    let mut kept = vec![true; count];
    let mut omitted = 0u64;
    if count > opts.max_spans {
        let mut order: Vec<usize> = (0..count).collect();
        // Stable: within a priority, start order (the index is sorted by start).
        order.sort_by_key(|&i| index.roles[i] == Role::Other);
        kept = vec![false; count];
        for &i in order.iter().take(opts.max_spans) {
            kept[i] = true;
        }
        omitted = (count - opts.max_spans) as u64;
    }
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut roots = Vec::new();
    for i in (0..count).filter(|&i| kept[i]) {
        match index.ancestors(i).find(|&a| kept[a]) {
            Some(parent) => children[parent].push(i),
            None => roots.push(i),
        }
    }
    let origin = index
        .spans
        .iter()
        .map(|s| s.start_unix_nano)
        .min()
        .unwrap_or(0);
    let mut builder = TreeBuilder {
        index,
        children: &children,
        visited: vec![false; count],
        budget: Budget {
            opts,
            left: opts.max_bytes,
            omitted: 0,
        },
        origin,
    };
    let mut tree = Vec::new();
    for &root in &roots {
        if let Some(node) = builder.node(root, 0) {
            tree.push(node);
        }
    }
    // Spans on a loop of parent ids are reachable from no root: the earliest of each loop
    // becomes one.
    for (i, kept) in kept.iter().enumerate() {
        if *kept && !builder.visited[i] {
            if let Some(node) = builder.node(i, 0) {
                tree.push(node);
            }
        }
    }
    tree.sort_by_key(|n| n.start_ms);
    (tree, omitted + builder.budget.omitted)
}

struct TreeBuilder<'a, 'o> {
    index: &'a Index<'a>,
    children: &'a [Vec<usize>],
    visited: Vec<bool>,
    budget: Budget<'o>,
    origin: u64,
}

impl TreeBuilder<'_, '_> {
    fn node(&mut self, i: usize, depth: usize) -> Option<SpanNode> {
        if self.visited[i] {
            return None;
        }
        self.visited[i] = true;
        let mut node = self.bare(i);
        if depth + 1 < MAX_DEPTH {
            for &child in &self.children[i] {
                if let Some(child) = self.node(child, depth + 1) {
                    node.children.push(child);
                }
            }
            return Some(node);
        }
        // Too deep: every descendant hangs flat from here, in start order.
        let mut below = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = self.children[i].clone();
        while let Some(next) = stack.pop() {
            if self.visited[next] || !seen.insert(next) {
                continue;
            }
            below.push(next);
            stack.extend(&self.children[next]);
        }
        // The index is in start order.
        below.sort_unstable();
        for next in below {
            self.visited[next] = true;
            let leaf = self.bare(next);
            node.children.push(leaf);
        }
        Some(node)
    }

    /// The span's node without its children, with what it stands for.
    fn bare(&mut self, i: usize) -> SpanNode {
        let span = self.index.spans[i];
        let mut node = SpanNode {
            name: span.name.clone(),
            kind: kind_name(span.kind).to_string(),
            start_ms: span.start_unix_nano.saturating_sub(self.origin) / 1_000_000,
            duration_ms: span.duration_ms(),
            status: match &span.status {
                SpanStatus::Unset => None,
                SpanStatus::Ok => Some("ok".to_string()),
                SpanStatus::Error(message) => {
                    let message = error_text(message);
                    Some(if message.is_empty() {
                        "error".to_string()
                    } else {
                        format!("error: {message}")
                    })
                }
            },
            attributes: self.budget.attributes(span),
            role: SpanRole::Other,
            label: String::new(),
            children: Vec::new(),
        };
        let role = role(&node.name, &node.attributes);
        node.label = detail(&node, role);
        node.role = match role {
            Role::Tool => SpanRole::Tool,
            Role::Model => SpanRole::Model,
            Role::Other => SpanRole::Other,
        };
        node
    }
}

// ---------------------------------------------------------------------------------------
// The summary for a judge.

/// A short text of the span tree for a judge's prompt (about 1 KB at most): one line per
/// span that matters (the top two levels, tool and model spans, failures), indented by
/// depth, with durations, tool names, models and errors; what does not fit is counted.
pub(crate) fn summary(tree: &[SpanNode]) -> String {
    let mut out = String::new();
    let mut left_out = 0usize;
    for node in tree {
        summarize(node, 0, 0, &mut out, &mut left_out);
    }
    if left_out > 0 {
        out.push_str(&format!("(+{left_out} more spans not shown)\n"));
    }
    out
}

fn summarize(node: &SpanNode, depth: usize, indent: usize, out: &mut String, left_out: &mut usize) {
    let role = role(&node.name, &node.attributes);
    let failed = node
        .status
        .as_deref()
        .is_some_and(|s| s.starts_with("error"));
    let shown = depth < 2 || role != Role::Other || failed;
    let mut child_indent = indent;
    if shown {
        let line = summary_line(node, role, indent);
        // Room is kept for the closing count.
        if out.len() + line.len() + 40 <= SUMMARY_BYTES {
            out.push_str(&line);
            child_indent = indent + 1;
        } else {
            *left_out += 1;
        }
    }
    for child in &node.children {
        summarize(child, depth + 1, child_indent, out, left_out);
    }
}

fn summary_line(node: &SpanNode, role: Role, indent: usize) -> String {
    let mut line = format!(
        "{}{} ({} ms)",
        "  ".repeat(indent),
        clip(&node.name, 80),
        node.duration_ms
    );
    let detail = detail(node, role);
    if !detail.is_empty() {
        line.push(' ');
        line.push_str(&detail);
    }
    if let Some(status) = node.status.as_deref().filter(|s| s.starts_with("error")) {
        line.push_str(&format!(" {}", clip(status, 160)));
    }
    line.push('\n');
    line
}

/// What says which tool or model a span stands for: `tool get_weather` (when its name
/// does not say it already), `model gpt-4o tokens 12/5`; empty for other spans.
fn detail(node: &SpanNode, role: Role) -> String {
    let attribute = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| node.attributes.get(*k))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    };
    let mut parts = Vec::new();
    match role {
        Role::Tool => {
            if let Some(tool) = attribute(&TOOL_NAME) {
                if !node.name.contains(&tool) {
                    parts.push(format!("tool {}", clip(&tool, 60)));
                }
            }
        }
        Role::Model => {
            if let Some(model) = attribute(&MODEL) {
                parts.push(format!("model {}", clip(&model, 60)));
            }
            let input = attribute(&INPUT_TOKENS);
            let output = attribute(&OUTPUT_TOKENS);
            if input.is_some() || output.is_some() {
                parts.push(format!(
                    "tokens {}/{}",
                    input.as_deref().unwrap_or("?"),
                    output.as_deref().unwrap_or("?")
                ));
            }
        }
        Role::Other => {}
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// 2023-11-14T22:13:20Z, in nanoseconds: the turn's spans start from here.
    const T0: u64 = 1_700_000_000_000_000_000;

    /// A span of trace 1 with id `id`, under `parent`, from `start` to `end` (ms after
    /// T0), with `attributes` (a JSON object).
    fn span(
        id: u64,
        parent: Option<u64>,
        name: &str,
        start: u64,
        end: u64,
        attributes: Value,
    ) -> Span {
        let Value::Object(attributes) = attributes else {
            panic!("attributes must be an object");
        };
        Span {
            trace_id: TraceId([1; 16]),
            span_id: SpanId(id.to_be_bytes()),
            parent_span_id: parent.map(|p| SpanId(p.to_be_bytes())),
            name: name.to_string(),
            kind: SpanKind::Internal,
            start_unix_nano: T0 + start * 1_000_000,
            end_unix_nano: T0 + end * 1_000_000,
            status: SpanStatus::Unset,
            attributes,
            service: Some("agent".to_string()),
        }
    }

    fn failed(mut span: Span, message: &str) -> Span {
        span.status = SpanStatus::Error(message.to_string());
        span
    }

    fn read_all(spans: &[Span]) -> Traced {
        read(spans, &ReadOptions::default())
    }

    fn names(traced: &Traced) -> Vec<&str> {
        traced.tool_calls.iter().map(|c| c.name.as_str()).collect()
    }

    fn usage(model: &str, input: u64, output: u64) -> ModelUsage {
        ModelUsage {
            model: Some(model.to_string()),
            input_tokens: input,
            output_tokens: output,
        }
    }

    /// pydantic-ai 2.x (`Instrumentation` capability, instrumentation version 5), as
    /// pydantic-ai-slim 2.68.0 emitted them for an agent whose model asked for two tools,
    /// then a third that raised: the attribute keys of tests/test_logfire.py
    /// (`test_tool_attributes`, `test_logfire_record_feedback`) in pydantic/pydantic-ai.
    /// Message-content attributes are left out.
    fn pydantic_ai_v5() -> Vec<Span> {
        let common = json!({
            "gen_ai.agent.name": "agent",
            "gen_ai.agent.call.id": "01a215da-ce52-74af-b2ab-344fbf0909ca",
            "gen_ai.conversation.id": "01a215da-ce52-74af-b2ab-3450d19fd4fe",
        });
        let with = |extra: Value| {
            let mut attributes = common.as_object().unwrap().clone();
            attributes.extend(extra.as_object().unwrap().clone());
            Value::Object(attributes)
        };
        vec![
            failed(
                span(
                    1,
                    None,
                    "invoke_agent agent",
                    0,
                    100,
                    with(json!({
                        "model_name": "function:model:",
                        "agent_name": "agent",
                        "gen_ai.operation.name": "invoke_agent",
                        "logfire.msg": "agent run",
                        "gen_ai.aggregated_usage.input_tokens": 106,
                        "gen_ai.aggregated_usage.output_tokens": 26,
                    })),
                ),
                "RuntimeError: kaboom",
            ),
            span(
                2,
                Some(1),
                "chat function:model:",
                1,
                20,
                with(json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "function",
                    "gen_ai.system": "function",
                    "gen_ai.request.model": "function:model:",
                    "gen_ai.usage.input_tokens": 51,
                    "gen_ai.usage.output_tokens": 11,
                    "gen_ai.response.model": "function:model:",
                })),
            ),
            span(
                3,
                Some(1),
                "execute_tool get_weather",
                21,
                30,
                with(json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_w1",
                    "gen_ai.tool.call.arguments": "{\"city\":\"Paris\"}",
                    "logfire.msg": "running tool: get_weather",
                    "gen_ai.tool.call.result": "sunny in Paris",
                })),
            ),
            span(
                4,
                Some(1),
                "execute_tool add",
                22,
                31,
                with(json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "add",
                    "gen_ai.tool.call.id": "call_a1",
                    "gen_ai.tool.call.arguments": "{\"a\":2,\"b\":3}",
                    "logfire.msg": "running tool: add",
                    "gen_ai.tool.call.result": "5",
                })),
            ),
            span(
                5,
                Some(1),
                "chat function:model:",
                32,
                50,
                with(json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "function",
                    "gen_ai.system": "function",
                    "gen_ai.request.model": "function:model:",
                    "gen_ai.usage.input_tokens": 55,
                    "gen_ai.usage.output_tokens": 15,
                    "gen_ai.response.model": "function:model:",
                })),
            ),
            // The exception is in the span's events; the status has no description.
            failed(
                span(
                    6,
                    Some(1),
                    "execute_tool boom",
                    51,
                    52,
                    with(json!({
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "boom",
                        "gen_ai.tool.call.id": "call_b1",
                        "gen_ai.tool.call.arguments": "{\"x\":1}",
                        "logfire.msg": "running tool: boom",
                    })),
                ),
                "",
            ),
        ]
    }

    #[test]
    fn genai_semconv_tool_and_chat_spans_as_pydantic_ai_writes_them() {
        let traced = read_all(&pydantic_ai_v5());
        assert_eq!(
            traced.tool_calls,
            vec![
                TracedCall {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                    result: Some(json!("sunny in Paris")),
                    error: None,
                    call_id: Some("call_w1".into()),
                },
                TracedCall {
                    name: "add".into(),
                    arguments: json!({"a": 2, "b": 3}),
                    result: Some(json!(5)),
                    error: None,
                    call_id: Some("call_a1".into()),
                },
                TracedCall {
                    name: "boom".into(),
                    arguments: json!({"x": 1}),
                    result: None,
                    error: Some("error".into()),
                    call_id: Some("call_b1".into()),
                },
            ]
        );
        // Two model calls; the agent span's `gen_ai.aggregated_usage.*` (106/26, their
        // sum) is not added again.
        assert_eq!(
            traced.usage,
            vec![
                usage("function:model:", 51, 11),
                usage("function:model:", 55, 15)
            ]
        );
        assert_eq!(traced.omitted, 0);
        assert_eq!(traced.tree.len(), 1);
        let root = &traced.tree[0];
        assert_eq!(root.status.as_deref(), Some("error: RuntimeError: kaboom"));
        let children: Vec<&str> = root.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            children,
            [
                "chat function:model:",
                "execute_tool get_weather",
                "execute_tool add",
                "chat function:model:",
                "execute_tool boom"
            ]
        );
        // Only the attributes read are kept: not pydantic-ai's own, nor the aggregates.
        assert!(!root
            .attributes
            .contains_key("gen_ai.aggregated_usage.input_tokens"));
        assert!(!root.attributes.contains_key("logfire.msg"));
        assert_eq!(
            root.attributes["gen_ai.operation.name"],
            json!("invoke_agent")
        );
        assert_eq!(
            root.children[1].attributes["gen_ai.tool.call.arguments"],
            json!("{\"city\":\"Paris\"}")
        );
        assert_eq!(root.children[4].status.as_deref(), Some("error"));
    }

    /// pydantic-ai before toolsets (instrumentation version 2 names, no operation name on
    /// tool spans): `tool_arguments` / `tool_response` on a `running tool` span, as in
    /// tests/test_logfire.py at pydantic/pydantic-ai 849aa4c9 (`test_tool_attributes`).
    #[test]
    fn pydantic_ai_older_tool_attribute_names() {
        let spans = vec![
            span(
                1,
                None,
                "agent run",
                0,
                50,
                json!({
                    "model_name": "test",
                    "agent_name": "my_agent",
                    "logfire.msg": "my_agent run",
                    "gen_ai.usage.input_tokens": 103,
                    "gen_ai.usage.output_tokens": 12,
                }),
            ),
            span(
                2,
                Some(1),
                "chat test",
                1,
                10,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": "test",
                    "gen_ai.request.model": "test",
                    "gen_ai.usage.input_tokens": 51,
                    "gen_ai.usage.output_tokens": 4,
                    "gen_ai.response.model": "test",
                }),
            ),
            span(
                3,
                Some(1),
                "running tool",
                11,
                12,
                json!({
                    "gen_ai.tool.name": "add_numbers",
                    "gen_ai.tool.call.id": "pyd_ai_tool_call_id__add_numbers",
                    "tool_arguments": "{\"x\":42,\"y\":42}",
                    "tool_response": "84",
                    "logfire.msg": "running tool: add_numbers",
                }),
            ),
            span(
                4,
                Some(1),
                "chat test",
                13,
                20,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": "test",
                    "gen_ai.request.model": "test",
                    "gen_ai.usage.input_tokens": 52,
                    "gen_ai.usage.output_tokens": 8,
                    "gen_ai.response.model": "test",
                }),
            ),
        ];
        let traced = read_all(&spans);
        assert_eq!(
            traced.tool_calls,
            vec![TracedCall {
                name: "add_numbers".into(),
                arguments: json!({"x": 42, "y": 42}),
                result: Some(json!(84)),
                error: None,
                call_id: Some("pyd_ai_tool_call_id__add_numbers".into()),
            }]
        );
        // The agent run span's `gen_ai.usage.*` is the sum of the two chats: an agent span
        // is never a model span, whatever its attributes are called.
        assert_eq!(
            traced.usage,
            vec![usage("test", 51, 4), usage("test", 52, 8)]
        );
    }

    /// A LangGraph ReAct agent traced by OpenInference (openinference-instrumentation-
    /// langchain 0.1.80, langchain-core 1.8.3, langgraph 1.2.24): the spans' names,
    /// parents, statuses and attributes as captured from a run whose model asked for
    /// `get_weather(city)` and `add(a, b)`, then `boom(x)`, which raised. The LLM spans
    /// carry the calls flattened (spec/tool_calling.md in Arize-ai/openinference; the
    /// keys `_tracer.py` writes); the TOOL spans carry a one-argument tool's bare value
    /// and the serialized `ToolMessage`. Message-history attributes are left out.
    fn openinference_langgraph(with_ids: bool) -> Vec<Span> {
        let id = |value: &str| if with_ids { json!(value) } else { Value::Null };
        let mut spans = vec![
            span(1, None, "LangGraph", 0, 200, json!({"openinference.span.kind": "CHAIN"})),
            span(2, Some(1), "agent", 1, 30, json!({"openinference.span.kind": "AGENT"})),
            span(3, Some(2), "call_model", 2, 29, json!({"openinference.span.kind": "CHAIN"})),
            span(4, Some(2), "RunnableSequence", 3, 28, json!({"openinference.span.kind": "CHAIN"})),
            span(5, Some(4), "Prompt", 4, 5, json!({"openinference.span.kind": "CHAIN"})),
            span(6, Some(4), "Fake", 6, 27, json!({
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": id("call_w1"),
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{\"city\": \"Paris\"}",
                "llm.output_messages.0.message.tool_calls.1.tool_call.id": id("call_a1"),
                "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "add",
                "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": "{\"a\": 2, \"b\": 3}",
                "llm.invocation_parameters": "{\"_type\": \"fake\", \"stop\": null}",
                "llm.provider": "fake",
                "llm.model_name": "fake-model",
                "llm.token_count.prompt": 20,
                "llm.token_count.completion": 7,
                "llm.token_count.total": 27,
                "openinference.span.kind": "LLM",
            })),
            span(7, Some(2), "should_continue", 28, 29, json!({"openinference.span.kind": "CHAIN"})),
            span(8, Some(1), "tools", 31, 40, json!({"openinference.span.kind": "CHAIN"})),
            span(9, Some(1), "tools", 31, 41, json!({"openinference.span.kind": "CHAIN"})),
            span(10, Some(8), "get_weather", 32, 39, json!({
                "input.value": "Paris",
                "output.value": format!(
                    "{{\"type\": \"tool\", \"data\": {{\"content\": \"sunny in Paris\", \"additional_kwargs\": {{}}, \"response_metadata\": {{}}, \"type\": \"tool\", \"name\": \"get_weather\", \"id\": null, \"tool_call_id\": {}, \"artifact\": null, \"status\": \"success\"}}}}",
                    if with_ids { "\"call_w1\"" } else { "null" }
                ),
                "output.mime_type": "application/json",
                "tool.name": "get_weather",
                "tool.description": "Weather for a city.",
                "openinference.span.kind": "TOOL",
            })),
            span(11, Some(9), "add", 33, 40, json!({
                "input.value": "{\"a\": 2, \"b\": 3}",
                "input.mime_type": "application/json",
                "output.value": format!(
                    "{{\"type\": \"tool\", \"data\": {{\"content\": \"5\", \"additional_kwargs\": {{}}, \"response_metadata\": {{}}, \"type\": \"tool\", \"name\": \"add\", \"id\": null, \"tool_call_id\": {}, \"artifact\": null, \"status\": \"success\"}}}}",
                    if with_ids { "\"call_a1\"" } else { "null" }
                ),
                "output.mime_type": "application/json",
                "tool.name": "add",
                "tool.description": "Add.",
                "openinference.span.kind": "TOOL",
            })),
            span(12, Some(1), "agent", 42, 80, json!({"openinference.span.kind": "AGENT"})),
            span(13, Some(12), "Fake", 45, 78, json!({
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": id("call_b1"),
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "boom",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{\"x\": 1}",
                "llm.model_name": "fake-model",
                "llm.token_count.prompt": 30,
                "llm.token_count.completion": 5,
                "openinference.span.kind": "LLM",
            })),
            span(14, Some(1), "tools", 81, 90, json!({"openinference.span.kind": "CHAIN"})),
            failed(
                span(15, Some(14), "boom", 82, 89, json!({
                    "input.value": "{\"x\": 1}",
                    "input.mime_type": "application/json",
                    "tool.name": "boom",
                    "tool.description": "Fails.",
                    "openinference.span.kind": "TOOL",
                })),
                "ValueError('kaboom')Traceback (most recent call last):\n\n\n  File \"/site-packages/langchain_core/tools/base.py\", line 1190, in run\n    response = context.run(self._run, *tool_args, **tool_kwargs)\nValueError: kaboom",
            ),
            span(16, Some(1), "agent", 91, 120, json!({"openinference.span.kind": "AGENT"})),
            span(17, Some(16), "Fake", 92, 119, json!({
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Sunny, 5.",
                "llm.model_name": "fake-model",
                "llm.token_count.prompt": 40,
                "llm.token_count.completion": 4,
                "llm.token_count.total": 44,
                "openinference.span.kind": "LLM",
            })),
        ];
        if !with_ids {
            for span in &mut spans {
                span.attributes.retain(|_, v| !v.is_null());
            }
        }
        spans
    }

    #[test]
    fn openinference_langgraph_takes_arguments_and_ids_from_the_llm_span() {
        let traced = read_all(&openinference_langgraph(true));
        assert_eq!(
            traced.tool_calls,
            vec![
                // `input.value` says only "Paris": the arguments are the model's.
                TracedCall {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                    result: Some(json!("sunny in Paris")),
                    error: None,
                    call_id: Some("call_w1".into()),
                },
                TracedCall {
                    name: "add".into(),
                    arguments: json!({"a": 2, "b": 3}),
                    result: Some(json!(5)),
                    error: None,
                    call_id: Some("call_a1".into()),
                },
                // No output and no id on the failed span: joined by name.
                TracedCall {
                    name: "boom".into(),
                    arguments: json!({"x": 1}),
                    result: None,
                    error: Some("ValueError('kaboom')".into()),
                    call_id: Some("call_b1".into()),
                },
            ]
        );
        // Three LLM spans; the AGENT and CHAIN spans around them add nothing.
        assert_eq!(
            traced.usage,
            vec![
                usage("fake-model", 20, 7),
                usage("fake-model", 30, 5),
                usage("fake-model", 40, 4)
            ]
        );
        let root = &traced.tree[0];
        assert_eq!(root.name, "LangGraph");
        let boom = root
            .children
            .iter()
            .flat_map(|c| &c.children)
            .find(|c| c.name == "boom")
            .expect("the boom span under its tools node");
        assert_eq!(boom.status.as_deref(), Some("error: ValueError('kaboom')"));
    }

    #[test]
    fn openinference_without_ids_joins_by_name_in_order() {
        // The same run with no call ids anywhere, and the model asking for `get_weather`
        // twice: each TOOL span takes the next declaration of its name.
        let mut spans = openinference_langgraph(false);
        let llm = &mut spans[5].attributes;
        llm.insert(
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.name".into(),
            json!("get_weather"),
        );
        llm.insert(
            "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments".into(),
            json!("{\"city\": \"Oslo\"}"),
        );
        let second = &mut spans[10];
        second
            .attributes
            .insert("tool.name".into(), json!("get_weather"));
        second
            .attributes
            .insert("input.value".into(), json!("Oslo"));
        let traced = read_all(&spans);
        assert_eq!(names(&traced), ["get_weather", "get_weather", "boom"]);
        assert_eq!(traced.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(traced.tool_calls[1].arguments, json!({"city": "Oslo"}));
        assert_eq!(traced.tool_calls[2].arguments, json!({"x": 1}));
        assert!(traced.tool_calls.iter().all(|c| c.call_id.is_none()));
    }

    #[test]
    fn openinference_tool_span_without_a_declaration_keeps_its_own_input() {
        // An OpenInference TOOL span no LLM span asked for (a tool run by code): a JSON
        // input is the arguments, a bare one is kept as it is.
        let spans = vec![
            span(
                1,
                None,
                "lookup",
                0,
                1,
                json!({
                    "openinference.span.kind": "TOOL",
                    "tool.name": "lookup",
                    "input.value": "{\"q\": \"rust\"}",
                    "output.value": "found",
                }),
            ),
            span(
                2,
                None,
                "echo",
                2,
                3,
                json!({
                    "openinference.span.kind": "TOOL",
                    "tool.name": "echo",
                    "input.value": "hello there",
                }),
            ),
            // A result that merely has an `output` field is no envelope.
            span(
                3,
                None,
                "shell",
                4,
                5,
                json!({
                    "openinference.span.kind": "TOOL",
                    "tool.name": "shell",
                    "input.value": "{\"cmd\": \"ls\"}",
                    "output.value": "{\"output\": \"3 files\"}",
                }),
            ),
        ];
        let traced = read_all(&spans);
        assert_eq!(traced.tool_calls[0].arguments, json!({"q": "rust"}));
        assert_eq!(traced.tool_calls[0].result, Some(json!("found")));
        assert_eq!(traced.tool_calls[1].arguments, json!("hello there"));
        assert_eq!(traced.tool_calls[1].result, None);
        assert_eq!(
            traced.tool_calls[2].result,
            Some(json!({"output": "3 files"}))
        );
    }

    /// The same LangGraph agent traced by OpenLLMetry (opentelemetry-instrumentation-
    /// langchain 0.62.4): tool spans `execute_tool <name>` whose arguments and result
    /// are the callback's envelopes (`on_tool_start` / `on_tool_end` in
    /// opentelemetry/instrumentation/langchain/callback_handler.py of traceloop/
    /// openllmetry), as captured; `traceloop.association.properties.*` left out.
    #[test]
    fn openllmetry_langchain_envelopes_are_taken_off() {
        let envelope_in = |input_str: &str, inputs: &str, id: &str| {
            format!(
                "{{\"input_str\": \"{input_str}\", \"tags\": [\"seq:step:1\"], \"metadata\": {{\"ls_integration\": \"langgraph\", \"langgraph_step\": 2, \"langgraph_node\": \"tools\"}}, \"inputs\": {inputs}, \"kwargs\": {{\"color\": \"green\", \"name\": null, \"tool_call_id\": \"{id}\"}}}}"
            )
        };
        let envelope_out = |content: &str, name: &str, id: &str| {
            format!(
                "{{\"output\": {{\"lc\": 1, \"type\": \"constructor\", \"id\": [\"langchain\", \"schema\", \"messages\", \"ToolMessage\"], \"kwargs\": {{\"content\": \"{content}\", \"type\": \"tool\", \"name\": \"{name}\", \"tool_call_id\": \"{id}\", \"status\": \"success\"}}}}, \"kwargs\": {{\"tags\": [\"seq:step:1\"], \"color\": \"green\", \"name\": \"{name}\"}}}}"
            )
        };
        let tool = |id: u64,
                    parent: u64,
                    name: &str,
                    start: u64,
                    input: String,
                    output: Option<String>| {
            let mut attributes = json!({
                "traceloop.workflow.name": "LangGraph",
                "traceloop.entity.path": "tools",
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": name,
                "gen_ai.provider.name": "langgraph",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
                "traceloop.entity.input": input,
                "gen_ai.tool.call.arguments": input,
                "gen_ai.task.status": "success",
            });
            if let Some(output) = output {
                attributes["traceloop.entity.output"] = json!(output);
                attributes["gen_ai.tool.call.result"] = json!(output);
            }
            span(
                id,
                Some(parent),
                &format!("execute_tool {name}"),
                start,
                start + 5,
                attributes,
            )
        };
        let chat = |id: u64, parent: u64, start: u64, input: u64, output: u64| {
            span(
                id,
                Some(parent),
                "Fake.chat",
                start,
                start + 5,
                json!({
                    "traceloop.workflow.name": "LangGraph",
                    "traceloop.entity.path": "agent.RunnableSequence",
                    "gen_ai.provider.name": "langchain",
                    "gen_ai.operation.name": "chat",
                    "gen_ai.response.model": "fake-model",
                    "gen_ai.request.model": "fake-model",
                    "gen_ai.usage.input_tokens": input,
                    "gen_ai.usage.output_tokens": output,
                    "gen_ai.usage.total_tokens": input + output,
                }),
            )
        };
        let task = |id: u64, parent: u64, name: &str, start: u64| {
            span(
                id,
                Some(parent),
                &format!("execute_task {name}"),
                start,
                start + 9,
                json!({
                    "traceloop.span.kind": "task",
                    "traceloop.entity.name": name,
                    "gen_ai.operation.name": "execute_task",
                    "gen_ai.task.name": name,
                }),
            )
        };
        let mut boom = tool(
            9,
            8,
            "boom",
            41,
            envelope_in("{'x': 1}", "{\"x\": 1}", "call_b1"),
            None,
        );
        boom.attributes
            .insert("gen_ai.task.status".into(), json!("failure"));
        boom.attributes
            .insert("error.type".into(), json!("ValueError"));
        let spans = vec![
            span(
                1,
                None,
                "invoke_agent LangGraph",
                0,
                100,
                json!({
                    "gen_ai.provider.name": "langgraph",
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "LangGraph",
                }),
            ),
            span(
                2,
                Some(1),
                "LangGraph.workflow",
                0,
                99,
                json!({
                    "traceloop.span.kind": "workflow",
                    "traceloop.entity.name": "LangGraph",
                    "gen_ai.operation.name": "invoke_agent",
                }),
            ),
            task(3, 2, "agent", 1),
            chat(4, 3, 2, 20, 7),
            task(5, 2, "tools", 11),
            tool(
                6,
                5,
                "get_weather",
                12,
                envelope_in("{'city': 'Paris'}", "{\"city\": \"Paris\"}", "call_w1"),
                Some(envelope_out("sunny in Paris", "get_weather", "call_w1")),
            ),
            tool(
                7,
                5,
                "add",
                13,
                envelope_in("{'a': 2, 'b': 3}", "{\"a\": 2, \"b\": 3}", "call_a1"),
                Some(envelope_out("5", "add", "call_a1")),
            ),
            task(8, 2, "tools", 40),
            failed(boom, "kaboom"),
            chat(10, 2, 60, 40, 4),
        ];
        let traced = read_all(&spans);
        assert_eq!(
            traced.tool_calls,
            vec![
                TracedCall {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                    result: Some(json!("sunny in Paris")),
                    error: None,
                    call_id: Some("call_w1".into()),
                },
                TracedCall {
                    name: "add".into(),
                    arguments: json!({"a": 2, "b": 3}),
                    result: Some(json!(5)),
                    error: None,
                    call_id: Some("call_a1".into()),
                },
                TracedCall {
                    name: "boom".into(),
                    arguments: json!({"x": 1}),
                    result: None,
                    error: Some("kaboom".into()),
                    call_id: Some("call_b1".into()),
                },
            ]
        );
        // Two chat spans; `invoke_agent` and the workflow span are not model spans.
        assert_eq!(
            traced.usage,
            vec![usage("fake-model", 20, 7), usage("fake-model", 40, 4)]
        );
    }

    /// traceloop's `@tool` decorator and OpenLLMetry's older model spans: the span
    /// `<name>.tool` with `{"args", "kwargs"}` as input and the JSON of the return value
    /// as output (`_setup_span` / `_handle_span_input` / `_handle_span_output` in
    /// traceloop/sdk/decorators/base.py), and an `openai.chat` span with
    /// `llm.request.type` and the `gen_ai.usage.prompt_tokens` names that
    /// opentelemetry-semantic-conventions-ai 0.4 used (its MIGRATION.md).
    #[test]
    fn traceloop_decorator_and_older_openllmetry_model_spans() {
        let spans = vec![
            span(
                1,
                None,
                "weather_agent.agent",
                0,
                50,
                json!({
                    "traceloop.span.kind": "agent",
                    "traceloop.entity.name": "weather_agent",
                }),
            ),
            span(
                2,
                Some(1),
                "openai.chat",
                1,
                10,
                json!({
                    "llm.request.type": "chat",
                    "gen_ai.system": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                    "gen_ai.usage.prompt_tokens": 82,
                    "gen_ai.usage.completion_tokens": 17,
                    "llm.usage.total_tokens": 99,
                }),
            ),
            span(
                3,
                Some(1),
                "get_weather.tool",
                11,
                12,
                json!({
                    "traceloop.span.kind": "tool",
                    "traceloop.entity.name": "get_weather",
                    "gen_ai.tool.name": "get_weather",
                    "traceloop.entity.path": "",
                    "traceloop.entity.input": "{\"args\": [], \"kwargs\": {\"city\": \"Paris\"}}",
                    "traceloop.entity.output": "\"sunny\"",
                }),
            ),
            span(
                4,
                Some(1),
                "convert.tool",
                13,
                14,
                json!({
                    "traceloop.span.kind": "tool",
                    "traceloop.entity.name": "convert",
                    "traceloop.entity.input": "{\"args\": [21.5], \"kwargs\": {}}",
                    "traceloop.entity.output": "{\"fahrenheit\": 70.7}",
                }),
            ),
        ];
        let traced = read_all(&spans);
        assert_eq!(names(&traced), ["get_weather", "convert"]);
        assert_eq!(traced.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(traced.tool_calls[0].result, Some(json!("sunny")));
        // Positional arguments have no names: the envelope is kept.
        assert_eq!(
            traced.tool_calls[1].arguments,
            json!({"args": [21.5], "kwargs": {}})
        );
        assert_eq!(
            traced.tool_calls[1].result,
            Some(json!({"fahrenheit": 70.7}))
        );
        assert_eq!(traced.usage, vec![usage("gpt-4o-mini-2024-07-18", 82, 17)]);
    }

    /// Google ADK: `execute_tool <name>` spans with `gcp.vertex.agent.tool_call_args` and
    /// `gcp.vertex.agent.tool_response` (a non-object return wrapped as `{"result": …}`),
    /// and `call_llm` spans (`trace_tool_call` / `trace_call_llm` in
    /// src/google/adk/telemetry/tracing.py of google/adk-python). The June 2025 layout
    /// (src/google/adk/telemetry.py) has no usage on `call_llm`; the later one does.
    #[test]
    fn adk_tool_and_call_llm_spans() {
        let tool = |id: u64, name: &str, start: u64, args: &str, response: &str, call_id: &str| {
            span(
                id,
                Some(2),
                &format!("execute_tool {name}"),
                start,
                start + 1,
                json!({
                    "gen_ai.system": "gcp.vertex.agent",
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.description": "Returns the weather.",
                    "gen_ai.tool.type": "FunctionTool",
                    "gen_ai.tool.call.id": call_id,
                    "gcp.vertex.agent.tool_call_args": args,
                    "gcp.vertex.agent.event_id": "8d2c5f7e-5ba8-4a56-9f5a-0d1f3f6c2b11",
                    "gcp.vertex.agent.tool_response": response,
                    "gcp.vertex.agent.llm_request": "{}",
                    "gcp.vertex.agent.llm_response": "{}",
                }),
            )
        };
        let spans = vec![
            span(1, None, "invocation", 0, 100, json!({})),
            span(
                2,
                Some(1),
                "invoke_agent weather_agent",
                1,
                99,
                json!({
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "weather_agent",
                    "gen_ai.conversation.id": "session-1",
                }),
            ),
            span(
                3,
                Some(2),
                "call_llm",
                2,
                10,
                json!({
                    "gen_ai.system": "gcp.vertex.agent",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "gcp.vertex.agent.invocation_id": "e-4f1b",
                    "gcp.vertex.agent.session_id": "session-1",
                    "gcp.vertex.agent.llm_request": "{\"model\": \"gemini-2.0-flash\"}",
                    "gen_ai.usage.input_tokens": 120,
                    "gen_ai.usage.output_tokens": 9,
                    "gen_ai.response.finish_reasons": ["stop"],
                }),
            ),
            tool(
                4,
                "get_weather",
                11,
                "{\"city\": \"Paris\"}",
                "{\"result\": \"sunny\"}",
                "adk-3b1f6a4e-9d0c-4c55-8e0e-2f5f4c7d9a10",
            ),
            tool(
                5,
                "get_forecast",
                12,
                "{\"city\": \"Paris\", \"days\": 2}",
                "{\"days\": [\"sun\", \"rain\"]}",
                "<not specified>",
            ),
            span(
                6,
                Some(2),
                "execute_tool (merged tools)",
                13,
                14,
                json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "(merged tools)",
                    "gen_ai.tool.description": "(merged tools)",
                    "gen_ai.tool.call.id": "e-merged",
                    "gcp.vertex.agent.tool_call_args": "N/A",
                }),
            ),
            // The older layout: no usage on the span.
            span(
                7,
                Some(2),
                "call_llm",
                20,
                30,
                json!({
                    "gen_ai.system": "gcp.vertex.agent",
                    "gen_ai.request.model": "gemini-2.0-flash",
                    "gcp.vertex.agent.event_id": "e-5",
                }),
            ),
        ];
        let traced = read_all(&spans);
        assert_eq!(
            traced.tool_calls,
            vec![
                TracedCall {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                    result: Some(json!("sunny")),
                    error: None,
                    call_id: Some("adk-3b1f6a4e-9d0c-4c55-8e0e-2f5f4c7d9a10".into()),
                },
                TracedCall {
                    name: "get_forecast".into(),
                    arguments: json!({"city": "Paris", "days": 2}),
                    result: Some(json!({"days": ["sun", "rain"]})),
                    error: None,
                    call_id: None,
                },
            ]
        );
        assert_eq!(
            traced.usage,
            vec![
                usage("gemini-2.0-flash", 120, 9),
                usage("gemini-2.0-flash", 0, 0)
            ]
        );
    }

    #[test]
    fn an_error_status_without_a_message_falls_back_to_error_type() {
        let spans = vec![failed(
            span(
                1,
                None,
                "execute_tool fetch",
                0,
                3,
                json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "fetch",
                    "gen_ai.tool.call.arguments": {"url": "http://127.0.0.1:9/"},
                    "error.type": "ConnectionRefusedError",
                }),
            ),
            "",
        )];
        let traced = read_all(&spans);
        // An object attribute (OTLP kvlist) is taken as it is.
        assert_eq!(
            traced.tool_calls[0].arguments,
            json!({"url": "http://127.0.0.1:9/"})
        );
        assert_eq!(
            traced.tool_calls[0].error.as_deref(),
            Some("ConnectionRefusedError")
        );
        assert_eq!(traced.tree[0].status.as_deref(), Some("error"));
    }

    #[test]
    fn a_tool_message_with_error_status_is_the_calls_error() {
        // LangGraph's ToolNode(handle_tool_errors=True) turns the exception into a
        // ToolMessage with status "error" when the tool's own run did not fail.
        let spans = vec![span(
            1,
            None,
            "divide",
            0,
            1,
            json!({
                "openinference.span.kind": "TOOL",
                "tool.name": "divide",
                "input.value": "{\"a\": 1, \"b\": 0}",
                "output.value": "{\"type\": \"tool\", \"data\": {\"content\": \"Error: ZeroDivisionError('division by zero')\\n Please fix your mistakes.\", \"type\": \"tool\", \"name\": \"divide\", \"tool_call_id\": \"call_d1\", \"status\": \"error\"}}",
            }),
        )];
        let call = &read_all(&spans).tool_calls[0];
        assert_eq!(
            call.error.as_deref(),
            Some("Error: ZeroDivisionError('division by zero')")
        );
        assert_eq!(call.call_id.as_deref(), Some("call_d1"));
        assert_eq!(
            call.to_tool_call().error,
            Some(json!("Error: ZeroDivisionError('division by zero')"))
        );
    }

    #[test]
    fn nested_model_spans_count_once() {
        let spans = vec![
            // OpenInference's LangChain span around its OpenAI instrumentation's span:
            // both carry the same figures; the inner one counts.
            span(
                1,
                None,
                "ChatOpenAI",
                0,
                10,
                json!({
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini",
                    "llm.token_count.prompt": 30,
                    "llm.token_count.completion": 6,
                }),
            ),
            span(
                2,
                Some(1),
                "ChatCompletion",
                1,
                9,
                json!({
                    "openinference.span.kind": "LLM",
                    "llm.model_name": "gpt-4o-mini-2024-07-18",
                    "llm.token_count.prompt": 30,
                    "llm.token_count.completion": 6,
                }),
            ),
            // A wrapper with figures around a span without: the wrapper counts, once.
            span(
                3,
                None,
                "chat gpt-4o",
                20,
                30,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 11,
                    "gen_ai.usage.output_tokens": 2,
                }),
            ),
            span(
                4,
                Some(3),
                "POST /v1/chat/completions",
                21,
                29,
                json!({
                    "gen_ai.operation.name": "chat",
                }),
            ),
            // Two levels without figures: one call, named by the outer span.
            span(
                5,
                None,
                "chat",
                40,
                50,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "local",
                }),
            ),
            span(
                6,
                Some(5),
                "generate_content",
                41,
                49,
                json!({
                    "gen_ai.operation.name": "generate_content",
                }),
            ),
        ];
        let traced = read_all(&spans);
        assert_eq!(
            traced.usage,
            vec![
                usage("gpt-4o-mini-2024-07-18", 30, 6),
                usage("gpt-4o", 11, 2),
                usage("local", 0, 0)
            ]
        );
    }

    #[test]
    fn aggregated_usage_on_agent_spans_is_not_counted() {
        // pydantic-ai with `use_aggregated_usage_attribute_names=False` writes the run's
        // total under `gen_ai.usage.*` on `invoke_agent` (tests/test_logfire.py,
        // `test_aggregated_usage_attribute_names_can_be_disabled`); OpenInference AGENT
        // and CHAIN spans may carry token counts too.
        let spans = vec![
            span(
                1,
                None,
                "invoke_agent agent",
                0,
                50,
                json!({
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 5,
                }),
            ),
            span(
                2,
                Some(1),
                "chat test",
                1,
                10,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "test",
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 5,
                }),
            ),
            span(
                3,
                None,
                "Agent",
                60,
                70,
                json!({
                    "openinference.span.kind": "AGENT",
                    "llm.token_count.prompt": 99,
                    "llm.token_count.completion": 9,
                }),
            ),
            span(
                4,
                Some(3),
                "RunnableSequence",
                61,
                69,
                json!({
                    "openinference.span.kind": "CHAIN",
                    "llm.token_count.prompt": 99,
                }),
            ),
        ];
        assert_eq!(read_all(&spans).usage, vec![usage("test", 10, 5)]);
    }

    #[test]
    fn tool_calls_are_in_start_order_whatever_the_arrival_order() {
        let mut spans = pydantic_ai_v5();
        spans.reverse();
        // A span exported twice (an exporter's retry) is read once.
        spans.push(spans[0].clone());
        let traced = read_all(&spans);
        assert_eq!(names(&traced), ["get_weather", "add", "boom"]);
        assert_eq!(traced.usage.len(), 2);
        assert_eq!(traced.tree[0].children.len(), 5);
    }

    #[test]
    fn orphans_become_roots_and_parent_loops_do_not_hang() {
        let mut spans = vec![
            span(1, Some(99), "handler", 5, 50, json!({})),
            span(
                2,
                Some(1),
                "execute_tool a",
                6,
                7,
                json!({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "a"}),
            ),
            span(3, None, "late root", 60, 61, json!({})),
            // Parents of each other.
            span(4, Some(5), "loop a", 70, 71, json!({})),
            span(5, Some(4), "loop b", 72, 73, json!({})),
        ];
        // A parent in another trace is not this one's parent.
        let mut other = span(6, Some(3), "other trace", 0, 1, json!({}));
        other.trace_id = TraceId([2; 16]);
        spans.push(other);
        let traced = read_all(&spans);
        let roots: Vec<(&str, u64)> = traced
            .tree
            .iter()
            .map(|n| (n.name.as_str(), n.start_ms))
            .collect();
        assert_eq!(
            roots,
            [
                ("other trace", 0),
                ("handler", 5),
                ("late root", 60),
                ("loop a", 70)
            ]
        );
        assert_eq!(traced.tree[1].children[0].name, "execute_tool a");
        assert_eq!(traced.tree[1].children[0].start_ms, 6);
        assert_eq!(traced.tree[3].children[0].name, "loop b");
        assert_eq!(names(&traced), ["a"]);
    }

    #[test]
    fn caps_on_spans_and_bytes_are_counted() {
        // 40 spans, the tool span last: with room for 5, the tool span is kept.
        let mut spans: Vec<Span> = (1..40)
            .map(|i| {
                span(
                    i,
                    Some(1).filter(|_| i > 1),
                    &format!("step {i}"),
                    i,
                    i + 1,
                    json!({"app.step": i}),
                )
            })
            .collect();
        spans.push(span(
            40,
            Some(1),
            "execute_tool last",
            45,
            46,
            json!({
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "last",
                "gen_ai.tool.call.result": "x".repeat(5000),
            }),
        ));
        let opts = ReadOptions {
            keep_attributes: vec!["app.*".into()],
            max_spans: 5,
            max_bytes: DEFAULT_MAX_BYTES,
        };
        let traced = read(&spans, &opts);
        let mut kept = Vec::new();
        fn walk<'a>(nodes: &'a [SpanNode], out: &mut Vec<&'a SpanNode>) {
            for node in nodes {
                out.push(node);
                walk(&node.children, out);
            }
        }
        walk(&traced.tree, &mut kept);
        let kept_names: Vec<&str> = kept.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            kept_names,
            ["step 1", "step 2", "step 3", "step 4", "execute_tool last"]
        );
        assert_eq!(traced.omitted, 35);
        // The long result is clipped in the tree, whole in the call.
        let result = kept[4].attributes["gen_ai.tool.call.result"]
            .as_str()
            .unwrap();
        assert!(result.starts_with(&"x".repeat(VALUE_CLIP)));
        assert!(result.ends_with("… [clipped 3976 bytes]"), "{result}");
        assert_eq!(traced.tool_calls[0].result, Some(json!("x".repeat(5000))));
        assert_eq!(kept[0].attributes["app.step"], json!(1));

        // A byte budget of 30 holds "app.step" + "1" (9) three times, then no more.
        let opts = ReadOptions {
            keep_attributes: vec!["app.step".into()],
            max_spans: 500,
            max_bytes: 30,
        };
        let traced = read(&spans[..10], &opts);
        let mut kept = Vec::new();
        walk(&traced.tree, &mut kept);
        let with_attributes = kept.iter().filter(|n| !n.attributes.is_empty()).count();
        assert_eq!(with_attributes, 3);
        assert_eq!(traced.omitted, 7);
    }

    #[test]
    fn a_deep_chain_is_flattened_below_the_depth_limit_and_round_trips() {
        let spans: Vec<Span> = (1..=100)
            .map(|i| {
                span(
                    i,
                    Some(i - 1).filter(|&p| p > 0),
                    &format!("level {i}"),
                    i,
                    200 - i,
                    json!({}),
                )
            })
            .collect();
        let traced = read_all(&spans);
        let mut depth = 0;
        let mut node = &traced.tree[0];
        while let Some(child) = node.children.first() {
            depth += 1;
            if child.children.is_empty() {
                break;
            }
            node = child;
        }
        // 32 levels below the root, the last holding the rest flat.
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(node.children.len(), 100 - MAX_DEPTH);
        assert_eq!(node.children.last().unwrap().name, "level 100");
        let text = serde_json::to_string(&traced.tree).unwrap();
        let back: Vec<SpanNode> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, traced.tree);
    }

    #[test]
    fn nodes_serialize_compactly() {
        let mut tool = span(
            2,
            Some(1),
            "execute_tool add",
            3,
            10,
            json!({
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "add",
                "secret.token": "not kept",
            }),
        );
        tool.kind = SpanKind::Unspecified;
        tool.status = SpanStatus::Ok;
        let spans = vec![span(1, None, "turn", 1, 20, json!({})), tool];
        let traced = read_all(&spans);
        assert_eq!(
            serde_json::to_value(&traced.tree).unwrap(),
            json!([{
                "name": "turn",
                "kind": "internal",
                "start_ms": 0,
                "duration_ms": 19,
                "children": [{
                    "name": "execute_tool add",
                    "start_ms": 2,
                    "duration_ms": 7,
                    "status": "ok",
                    "attributes": {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "add",
                    },
                    "role": "tool",
                }],
            }])
        );
    }

    #[test]
    fn the_summary_shows_what_matters_in_a_kilobyte() {
        let traced = read_all(&openinference_langgraph(true));
        let text = summary(&traced.tree);
        assert_eq!(
            text,
            "LangGraph (200 ms)\n\
             \x20 agent (29 ms)\n\
             \x20   Fake (21 ms) model fake-model tokens 20/7\n\
             \x20 tools (9 ms)\n\
             \x20   get_weather (7 ms)\n\
             \x20 tools (10 ms)\n\
             \x20   add (7 ms)\n\
             \x20 agent (38 ms)\n\
             \x20   Fake (33 ms) model fake-model tokens 30/5\n\
             \x20 tools (9 ms)\n\
             \x20   boom (7 ms) error: ValueError('kaboom')\n\
             \x20 agent (29 ms)\n\
             \x20   Fake (27 ms) model fake-model tokens 40/4\n"
        );
        let traced = read_all(&pydantic_ai_v5());
        let text = summary(&traced.tree);
        assert!(
            text.starts_with("invoke_agent agent (100 ms) error: RuntimeError: kaboom\n  chat function:model: (19 ms) model function:model: tokens 51/11\n"),
            "{text}"
        );

        // Hundreds of tool spans: the summary stays within its size and says what it left.
        let mut spans = vec![span(1, None, "turn", 0, 1000, json!({}))];
        spans.extend((2..300).map(|i| {
            span(
                i,
                Some(1),
                &format!("execute_tool tool_{i}"),
                i,
                i + 1,
                json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": format!("tool_{i}"),
                }),
            )
        }));
        let text = summary(&read_all(&spans).tree);
        assert!(text.len() <= SUMMARY_BYTES, "{} bytes", text.len());
        let shown = text.lines().filter(|l| l.contains("execute_tool")).count();
        assert!(
            text.ends_with(&format!("(+{} more spans not shown)\n", 298 - shown)),
            "{text}"
        );
    }

    #[test]
    fn flattened_tool_call_keys() {
        assert_eq!(
            flattened_tool_call(
                "llm.output_messages.0.message.tool_calls.12.tool_call.function.arguments"
            ),
            Some((0, 12, "function.arguments"))
        );
        assert_eq!(
            flattened_tool_call("llm.output_messages.0.message.role"),
            None
        );
        assert_eq!(
            flattened_tool_call("llm.input_messages.1.message.tool_calls.0.tool_call.id"),
            None
        );
    }

    #[test]
    fn semconv_output_messages_supply_missing_arguments() {
        // A tool span without content capture, and the chat span that asked for it with
        // `gen_ai.output.messages` (the GenAI semconv's JSON parts).
        let spans = vec![
            span(
                1,
                None,
                "chat gpt-4o",
                0,
                5,
                json!({
                    "gen_ai.operation.name": "chat",
                    "gen_ai.output.messages": "[{\"role\": \"assistant\", \"parts\": [{\"type\": \"tool_call\", \"id\": \"call_1\", \"name\": \"lookup\", \"arguments\": {\"q\": \"otel\"}}]}]",
                }),
            ),
            span(
                2,
                None,
                "execute_tool lookup",
                6,
                7,
                json!({
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.call.id": "call_1",
                }),
            ),
        ];
        let call = &read_all(&spans).tool_calls[0];
        assert_eq!(call.name, "lookup");
        assert_eq!(call.arguments, json!({"q": "otel"}));
    }
}
