//! What an `http` agent's request and answer look like on the wire (`format`): agentest's
//! own bodies, an OpenAI-compatible chat endpoint's, or a `custom` body template with
//! `reply` JSONPaths into the answer; and the `[session]` request.
//!
//! Templates and paths are compiled once, at load: a placeholder or path that cannot
//! work is a config error naming its table, never a case that fails later.

use std::collections::BTreeMap;
use std::sync::Arc;

use jsonpath_rust::parser::model::JpQuery;
use serde_json::{json, Map, Value};

use crate::config::{AgentConfig, HttpFormat, HttpReplyPaths, HttpSessionRequest};
use crate::errors::{AgentError, AgentSetupError};
use crate::protocol::{Reply, Request, ToolCall, Usage};
use crate::util::{clip, value_text};

/// The placeholders a body template may use, for the error that lists them.
const KNOWN: &str = "{{input}}, {{messages}}, {{session_id}}, {{test_id}}, {{turn}}, {{metadata}}, {{metadata.KEY}}, {{options}}, {{options.KEY}}";

/// A request field a placeholder stands for.
#[derive(Debug, Clone)]
pub(crate) enum Field {
    Input,
    Messages,
    SessionId,
    TestId,
    Turn,
    Metadata(Vec<String>),
    Options(Vec<String>),
    /// The id the `[session]` request returned.
    Session,
}

/// A piece of a template string: text, or a placeholder interpolated as text.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Text(String),
    Field(Field),
}

/// A body template, compiled: the JSON with its placeholders found.
#[derive(Debug, Clone)]
pub(crate) enum Template {
    /// Anything without a placeholder, as written (after `${VAR}` expansion).
    Literal(Value),
    /// A string that is exactly one placeholder: the value itself.
    Whole(Field),
    /// A string with placeholders inside: text.
    Text(Vec<Piece>),
    Array(Vec<Template>),
    Object(Vec<(String, Template)>),
}

/// What a template may use, and how `${VAR}`s are treated.
struct Scope<'a> {
    /// `{{session.id}}` is known (the agent has a `[session]` table, and this is not it).
    session: bool,
    /// Expands `${VAR}` in literal text (registered as secrets, so masked); off when
    /// only checking, at load, so that a variable set later is no error.
    expand: Option<&'a str>,
}

impl Template {
    fn compile(value: &Value, key: &str, scope: &Scope) -> Result<Template, AgentSetupError> {
        Ok(match value {
            Value::String(s) => Self::string(s, key, scope)?,
            Value::Array(items) => Template::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Self::compile(v, &format!("{key}[{i}]"), scope))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Template::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), Self::compile(v, &format!("{key}.{k}"), scope)?)))
                    .collect::<Result<_, AgentSetupError>>()?,
            ),
            other => Template::Literal(other.clone()),
        })
    }

    fn string(s: &str, key: &str, scope: &Scope) -> Result<Template, AgentSetupError> {
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or_else(|| AgentSetupError::Template {
                key: key.to_string(),
                problem: format!(
                    "\"{s}\" opens a placeholder with {{{{ and never closes it with }}}}"
                ),
            })?;
            pieces.push(Piece::Field(field(after[..end].trim(), key, scope)?));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        let expand = |text: String| match scope.expand {
            Some(what) => crate::util::expand_secret(&text, &format!("{what}.{key}"))
                .map_err(AgentSetupError::from),
            None => Ok(text),
        };
        Ok(match pieces.as_slice() {
            [] => Template::Literal(Value::String(String::new())),
            [Piece::Field(f)] => Template::Whole(f.clone()),
            [Piece::Text(_)] => Template::Literal(Value::String(expand(s.to_string())?)),
            _ => Template::Text(
                pieces
                    .into_iter()
                    .map(|p| match p {
                        Piece::Text(t) => Ok(Piece::Text(expand(t)?)),
                        field => Ok(field),
                    })
                    .collect::<Result<_, AgentSetupError>>()?,
            ),
        })
    }

    /// The body for one request; `session` is the `[session]` request's id.
    pub(crate) fn render(&self, request: &Request, session: Option<&str>) -> Value {
        match self {
            Template::Literal(v) => v.clone(),
            Template::Whole(f) => value_of(f, request, session),
            Template::Text(pieces) => Value::String(
                pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Text(t) => t.clone(),
                        Piece::Field(f) => value_text(&value_of(f, request, session)),
                    })
                    .collect(),
            ),
            Template::Array(items) => {
                Value::Array(items.iter().map(|t| t.render(request, session)).collect())
            }
            Template::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, t)| (k.clone(), t.render(request, session)))
                    .collect(),
            ),
        }
    }
}

fn field(name: &str, key: &str, scope: &Scope) -> Result<Field, AgentSetupError> {
    let path = |rest: &str| rest.split('.').map(str::to_string).collect::<Vec<_>>();
    Ok(match name {
        "input" => Field::Input,
        "messages" => Field::Messages,
        "session_id" => Field::SessionId,
        "test_id" => Field::TestId,
        "turn" => Field::Turn,
        "metadata" => Field::Metadata(Vec::new()),
        "options" => Field::Options(Vec::new()),
        "session.id" if scope.session => Field::Session,
        _ => match (
            name.strip_prefix("metadata."),
            name.strip_prefix("options."),
        ) {
            (Some(rest), _) if !rest.is_empty() => Field::Metadata(path(rest)),
            (_, Some(rest)) if !rest.is_empty() => Field::Options(path(rest)),
            _ => {
                let known = if scope.session {
                    format!("{KNOWN}, {{{{session.id}}}}")
                } else if name == "session.id" {
                    format!("{KNOWN} ({{{{session.id}}}} needs a [session] table with the request that hands out the id, and is not known in that request's own body)")
                } else {
                    KNOWN.to_string()
                };
                return Err(AgentSetupError::Placeholder {
                    key: key.to_string(),
                    placeholder: name.to_string(),
                    known,
                });
            }
        },
    })
}

fn value_of(field: &Field, request: &Request, session: Option<&str>) -> Value {
    let walk = |root: &Value, path: &[String]| {
        path.iter()
            .try_fold(root, |v, k| v.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    match field {
        Field::Input => Value::String(request.input.clone()),
        Field::Messages => serde_json::to_value(&request.messages).unwrap_or(Value::Null),
        Field::SessionId => Value::String(request.session_id.clone()),
        Field::TestId => Value::String(request.test_id.clone()),
        Field::Turn => json!(request.turn),
        Field::Metadata(path) => walk(&request.metadata, path),
        Field::Options(path) => walk(&request.options, path),
        Field::Session => session.map_or(Value::Null, |s| Value::String(s.to_string())),
    }
}

/// A JSONPath as written and compiled.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    text: String,
    query: Arc<JpQuery>,
}

impl Path {
    fn compile(text: &str, key: &str) -> Result<Path, AgentSetupError> {
        let query = jsonpath_rust::parser::parse_json_path(text.trim()).map_err(|e| {
            AgentSetupError::ReplyPath {
                key: key.to_string(),
                path: text.to_string(),
                reason: e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string(),
            }
        })?;
        Ok(Path {
            text: text.to_string(),
            query: Arc::new(query),
        })
    }

    /// Every value the path selects in `doc`.
    fn find(&self, doc: &Value) -> Vec<Value> {
        jsonpath_rust::query::js_path_process(&self.query, doc)
            .map(|found| found.into_iter().map(|r| r.val().clone()).collect())
            .unwrap_or_default()
    }
}

/// One value for what a path selected: itself, or the array of them.
fn one(mut found: Vec<Value>) -> Value {
    if found.len() == 1 {
        found.remove(0)
    } else {
        Value::Array(found)
    }
}

/// `tool_calls = {...}`, compiled.
#[derive(Debug, Clone)]
struct CallPaths {
    path: Path,
    name: Path,
    arguments: Option<Path>,
    result: Option<Path>,
}

/// `[reply]`, compiled.
#[derive(Debug, Clone)]
pub(crate) struct ReplyPaths {
    content: Option<Path>,
    awaiting_input: Option<Path>,
    data: Option<Path>,
    tool_calls: Option<CallPaths>,
    input_tokens: Option<Path>,
    output_tokens: Option<Path>,
}

impl ReplyPaths {
    fn compile(raw: &HttpReplyPaths) -> Result<ReplyPaths, AgentSetupError> {
        let opt =
            |p: &Option<String>, key: &str| p.as_deref().map(|p| Path::compile(p, key)).transpose();
        let tool_calls = raw
            .tool_calls
            .as_ref()
            .map(|t| {
                Ok::<_, AgentSetupError>(CallPaths {
                    path: Path::compile(&t.path, "reply.tool_calls.path")?,
                    name: Path::compile(&t.name, "reply.tool_calls.name")?,
                    arguments: opt(&t.arguments, "reply.tool_calls.arguments")?,
                    result: opt(&t.result, "reply.tool_calls.result")?,
                })
            })
            .transpose()?;
        let usage = raw.usage.clone().unwrap_or_default();
        Ok(ReplyPaths {
            content: opt(&raw.content, "reply.content")?,
            awaiting_input: opt(&raw.awaiting_input, "reply.awaiting_input")?,
            data: opt(&raw.data, "reply.data")?,
            tool_calls,
            input_tokens: opt(&usage.input_tokens, "reply.usage.input_tokens")?,
            output_tokens: opt(&usage.output_tokens, "reply.usage.output_tokens")?,
        })
    }

    /// The paths that must match somewhere in an answer, with their keys.
    fn required(&self) -> impl Iterator<Item = (&'static str, &Path)> {
        [
            ("reply.content", &self.content),
            ("reply.awaiting_input", &self.awaiting_input),
            ("reply.data", &self.data),
            ("reply.usage.input_tokens", &self.input_tokens),
            ("reply.usage.output_tokens", &self.output_tokens),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.as_ref().map(|p| (k, p)))
    }
}

/// A `custom` answer gathered from one JSON body, or event by event from a stream.
#[derive(Default)]
pub(crate) struct Gathered {
    /// Every content value found, in order.
    content: Vec<Value>,
    /// The last value each of the other required paths found, by key.
    last: BTreeMap<&'static str, Value>,
    tool_calls: Vec<ToolCall>,
}

impl Gathered {
    /// Applies the paths to one answer (or one event's JSON).
    pub(crate) fn add(&mut self, paths: &ReplyPaths, doc: &Value) {
        for (key, path) in paths.required() {
            let found = path.find(doc);
            if found.is_empty() {
                continue;
            }
            if key == "reply.content" {
                self.content.extend(found);
            } else {
                self.last.insert(key, one(found));
            }
        }
        if let Some(calls) = &paths.tool_calls {
            for call in calls.path.find(doc) {
                let name = calls.name.find(&call);
                // A call whose name is missing is no call: the path selected something else.
                let Some(name) = name.first() else { continue };
                let mut made = ToolCall::new(
                    value_text(name),
                    calls
                        .arguments
                        .as_ref()
                        .map_or(Value::Null, |a| one(a.find(&call))),
                );
                made.result = calls
                    .result
                    .as_ref()
                    .map(|r| r.find(&call))
                    .filter(|r| !r.is_empty())
                    .map(one);
                self.tool_calls.push(made);
            }
        }
    }

    /// The reply; `stream` joins the content found in every event as text. A required
    /// path that matched nothing is an error naming it, showing `body`.
    pub(crate) fn finish(
        mut self,
        paths: &ReplyPaths,
        shown: &str,
        stream: bool,
        body: &dyn Fn() -> String,
    ) -> Result<Reply, AgentError> {
        for (key, path) in paths.required() {
            let found = if key == "reply.content" {
                !self.content.is_empty()
            } else {
                self.last.contains_key(key)
            };
            if !found {
                return Err(AgentError::ReplyPathMissed {
                    shown: shown.to_string(),
                    key: key.to_string(),
                    path: path.text.clone(),
                    stream,
                    body: clip(body().trim()),
                });
            }
        }
        let mut reply = Reply {
            content: if stream {
                Value::String(self.content.iter().map(value_text).collect())
            } else if self.content.is_empty() {
                Value::Null
            } else {
                one(std::mem::take(&mut self.content))
            },
            tool_calls: self.tool_calls,
            ..Reply::default()
        };
        reply.awaiting_input = self.last.remove("reply.awaiting_input").map(|v| truthy(&v));
        reply.data = self.last.remove("reply.data");
        let tokens = |v: Option<Value>| -> Result<Option<u64>, AgentError> {
            v.map(|v| {
                number(&v).ok_or_else(|| AgentError::ReplyShape {
                    shown: shown.to_string(),
                    expected: "a token count (a number) at reply.usage's paths",
                    body: clip(&v.to_string()),
                })
            })
            .transpose()
        };
        let input = tokens(self.last.remove("reply.usage.input_tokens"))?;
        let output = tokens(self.last.remove("reply.usage.output_tokens"))?;
        if input.is_some() || output.is_some() {
            reply.usage = Some(Usage {
                input_tokens: input.unwrap_or(0),
                output_tokens: output.unwrap_or(0),
            });
        }
        Ok(reply)
    }
}

/// `awaiting_input`'s value: `true`, or anything but false, null, 0 or empty.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty() && s != "false",
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

/// A token count: a non-negative number, or a string holding one.
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The `[session]` request, compiled.
#[derive(Debug, Clone)]
pub(crate) struct SessionWire {
    /// The URL as the config writes it (before `${VAR}` expansion).
    pub(crate) url: String,
    pub(crate) body: Template,
    id: Path,
}

impl SessionWire {
    /// The id in the session request's answer: a string or a number.
    pub(crate) fn id(&self, doc: &Value, shown: &str) -> Result<String, AgentError> {
        match self.id.find(doc).first() {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) => Ok(n.to_string()),
            _ => Err(AgentError::ReplyPathMissed {
                shown: shown.to_string(),
                key: "session.id".into(),
                path: self.id.text.clone(),
                stream: false,
                body: clip(&doc.to_string()),
            }),
        }
    }
}

/// An `http` agent's wire format, compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Wire {
    pub(crate) format: HttpFormat,
    body: Option<Template>,
    reply: Option<ReplyPaths>,
    pub(crate) session: Option<SessionWire>,
    pub(crate) sse: bool,
}

/// Checks an `http` agent's wire keys at load, without expanding `${VAR}`s (what
/// [`crate::config::Loader::agent`] does); other kinds have none.
pub(crate) fn check_http_wire(agent: &AgentConfig) -> Result<(), AgentSetupError> {
    match agent {
        AgentConfig::Http {
            format,
            body,
            reply,
            session,
            sse,
            ..
        } => Wire::compile(
            *format,
            body.as_ref(),
            reply.as_deref(),
            session.as_deref(),
            *sse,
            None,
        )
        .map(drop),
        _ => Ok(()),
    }
}

impl SessionWire {
    /// The `[session]` request's template and the path of the id in its answer. The
    /// template cannot use the session id: there is none yet.
    fn compile(
        s: &HttpSessionRequest,
        expand: Option<&str>,
    ) -> Result<SessionWire, AgentSetupError> {
        let scope = Scope {
            session: false,
            expand,
        };
        Ok(SessionWire {
            url: s.url.clone(),
            body: Template::compile(
                s.body.as_ref().unwrap_or(&json!({})),
                "session.body",
                &scope,
            )?,
            id: Path::compile(&s.id, "session.id")?,
        })
    }
}

impl Wire {
    /// The wire of a kind that speaks an HTTP API of its own (`langgraph`, `a2a`)
    /// through the http kind's POSTs: no template, no reply paths.
    pub(crate) fn plain(what: &str) -> Result<Wire, AgentSetupError> {
        Wire::compile(HttpFormat::Agentest, None, None, None, false, Some(what))
    }

    /// Compiles the wire keys; `expand` names the table when `${VAR}`s are expanded.
    pub(crate) fn compile(
        format: HttpFormat,
        body: Option<&Value>,
        reply: Option<&HttpReplyPaths>,
        session: Option<&HttpSessionRequest>,
        sse: bool,
        expand: Option<&str>,
    ) -> Result<Wire, AgentSetupError> {
        Self::check_keys(format, body, reply, session, sse)?;
        let turn = Scope {
            session: session.is_some(),
            expand,
        };
        let session = session
            .map(|s| SessionWire::compile(s, expand))
            .transpose()?;
        Ok(Wire {
            format,
            body: body
                .map(|b| Template::compile(b, "body", &turn))
                .transpose()?,
            reply: reply.map(ReplyPaths::compile).transpose()?,
            session,
            sse,
        })
    }

    /// The wire keys the format takes: agentest's own has none, openai-chat no reply
    /// paths and a table for a body, custom needs both.
    fn check_keys(
        format: HttpFormat,
        body: Option<&Value>,
        reply: Option<&HttpReplyPaths>,
        session: Option<&HttpSessionRequest>,
        sse: bool,
    ) -> Result<(), AgentSetupError> {
        let name = match format {
            HttpFormat::Agentest => "agentest",
            HttpFormat::OpenaiChat => "openai-chat",
            HttpFormat::Custom => "custom",
        };
        let not = |key, fix| {
            Err(AgentSetupError::WireKey {
                key,
                format: name,
                fix,
            })
        };
        match format {
            HttpFormat::Agentest => {
                let fix = "agentest's own protocol has a fixed body; set format = \"openai-chat\" or \"custom\"";
                for (key, given) in [
                    ("body", body.is_some()),
                    ("reply", reply.is_some()),
                    ("session", session.is_some()),
                    ("stream", sse),
                ] {
                    if given {
                        return not(key, fix);
                    }
                }
            }
            HttpFormat::OpenaiChat => {
                if reply.is_some() {
                    return not("reply", "an OpenAI chat completion's reply is choices[0].message; use format = \"custom\" for reply paths");
                }
                if body.is_some_and(|b| !b.is_object()) {
                    return not("body as a non-table", "its `body` is a table of extra fields sent beside `messages`, like { model = \"assistant-id\" }");
                }
            }
            HttpFormat::Custom => {
                if body.is_none() {
                    return Err(AgentSetupError::CustomNeeds {
                        key: "body",
                        what: "the JSON template of the request, like { query = \"{{input}}\" }",
                    });
                }
                if reply.is_none() {
                    return Err(AgentSetupError::CustomNeeds { key: "reply", what: "a [reply] table with the JSONPath of the content (and of tool calls, data, usage), like content = \"$.answer\"" });
                }
            }
        }
        Ok(())
    }

    /// The request body of one turn.
    pub(crate) fn request_body(&self, request: &Request, session: Option<&str>) -> Value {
        let extra = self.body.as_ref().map(|t| t.render(request, session));
        match self.format {
            HttpFormat::Agentest => serde_json::to_value(request).unwrap_or(Value::Null),
            HttpFormat::Custom => extra.unwrap_or(Value::Null),
            HttpFormat::OpenaiChat => {
                let mut body = Map::new();
                body.insert(
                    "messages".into(),
                    Value::Array(request.messages.iter().map(chat_message).collect()),
                );
                if let Some(Value::Object(extra)) = extra {
                    body.extend(extra);
                }
                if self.sse {
                    body.insert("stream".into(), Value::Bool(true));
                    body.insert("stream_options".into(), json!({"include_usage": true}));
                }
                Value::Object(body)
            }
        }
    }

    /// The reply in one JSON answer.
    pub(crate) fn reply(&self, doc: Value, shown: &str) -> Result<Reply, AgentError> {
        match self.format {
            HttpFormat::Agentest => Reply::from_json(doc).map_err(AgentError::Protocol),
            HttpFormat::OpenaiChat => chat_reply(&doc, shown),
            HttpFormat::Custom => {
                let paths = self.paths();
                let mut gathered = Gathered::default();
                gathered.add(paths, &doc);
                gathered.finish(paths, shown, false, &|| doc.to_string())
            }
        }
    }

    /// The `[reply]` paths of a `custom` agent.
    pub(crate) fn paths(&self) -> &ReplyPaths {
        self.reply
            .as_ref()
            .expect("a custom agent has reply paths (checked at load)")
    }
}

/// One history message as an OpenAI chat message. The agent ran its own tools, whose
/// results agentest never saw: an assistant message goes without its `tool_calls`,
/// which a chat endpoint would refuse without the tool messages that answer them.
fn chat_message(m: &crate::protocol::Message) -> Value {
    let content = match &m.content {
        Value::String(s) => Value::String(s.clone()),
        Value::Null => Value::String(String::new()),
        other => Value::String(other.to_string()),
    };
    json!({"role": m.role, "content": content})
}

/// An OpenAI chat completion's `choices[0].message` as a reply.
fn chat_reply(doc: &Value, shown: &str) -> Result<Reply, AgentError> {
    let choice = &doc["choices"][0];
    let Some(message) = choice["message"].as_object() else {
        return Err(AgentError::ReplyShape {
            shown: shown.to_string(),
            expected: "an OpenAI chat completion (choices[0].message)",
            body: clip(&doc.to_string()),
        });
    };
    let mut reply = Reply {
        content: match message.get("content") {
            Some(Value::Null) | None => Value::String(String::new()),
            Some(c) => c.clone(),
        },
        ..Reply::default()
    };
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = &call["function"];
        reply.tool_calls.push(ToolCall::new(
            value_text(&f["name"]),
            f.get("arguments").cloned().unwrap_or(Value::Null),
        ));
    }
    reply.usage = chat_usage(&doc["usage"]);
    if choice["finish_reason"] == "length" {
        reply.truncated = Some(true);
    }
    Ok(reply)
}

/// An OpenAI `usage` object, when there is one.
pub(crate) fn chat_usage(usage: &Value) -> Option<Usage> {
    usage.as_object().map(|u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output_tokens: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Request {
        Request {
            session_id: "s-1".into(),
            test_id: "T".into(),
            turn: 2,
            input: "hi \"there\"".into(),
            messages: vec![crate::protocol::Message::user("hi \"there\"")],
            options: json!({"lang": "en"}),
            metadata: json!({"user": {"id": 7}}),
            attachments: Vec::new(),
            setup: None,
        }
    }

    fn compile(body: Value, session: bool) -> Result<Template, AgentSetupError> {
        Template::compile(
            &body,
            "body",
            &Scope {
                session,
                expand: None,
            },
        )
    }

    #[test]
    fn whole_placeholders_keep_their_value_and_others_are_text() {
        let t = compile(
            json!({"q": "{{input}}", "n": "{{ turn }}", "tag": "{{test_id}}/{{turn}}: {{metadata.user}}",
                   "h": ["{{messages}}", 3, null], "u": "{{metadata.user.id}}", "gone": "{{options.nope}}",
                   "in": "said {{input}}", "sid": "{{session.id}}"}),
            true,
        )
        .expect("compiles");
        assert_eq!(
            t.render(&request(), Some("conv-9")),
            json!({"q": "hi \"there\"", "n": 2, "tag": "T/2: {\"id\":7}",
                   "h": [[{"role": "user", "content": "hi \"there\""}], 3, null], "u": 7, "gone": null,
                   "in": "said hi \"there\"", "sid": "conv-9"})
        );
    }

    #[test]
    fn unknown_and_unclosed_placeholders_are_errors() {
        let e = compile(json!({"a": ["x", "{{inptu}}"]}), false).expect_err("unknown");
        assert!(
            e.to_string().starts_with(
                "body.a[1]: unknown placeholder {{inptu}}; the known ones are {{input}}, "
            ),
            "{e}"
        );
        let e = compile(json!({"a": "{{input"}), false).expect_err("unclosed");
        assert_eq!(
            e.to_string(),
            "body.a: \"{{input\" opens a placeholder with {{ and never closes it with }}"
        );
    }
}
