//! `langgraph` agents: a graph behind a LangGraph Agent Server (`langgraph dev`,
//! LangGraph Platform). One thread per case (`POST /threads`); each turn one
//! `POST /threads/{id}/runs/wait`, whose answer is the thread's whole state (or, with
//! `stream = true`, `/runs/stream`, whose last `values` event is): the reply is made of
//! the messages new in this turn.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::http::{Flow, HttpSession, HttpSpec};
use super::{CaseScope, Timed};
use crate::errors::AgentError;
use crate::protocol::{Reply, Request, ToolCall, Usage};

/// A `langgraph` agent, ready to start conversations.
pub(crate) struct LangGraphSpec {
    /// The server's base URL, headers, client, timeout and retries.
    pub(crate) http: Arc<HttpSpec>,
    pub(crate) assistant_id: String,
    config: Option<Value>,
    context: Option<Value>,
    stream: bool,
}

impl LangGraphSpec {
    pub(crate) fn new(
        http: HttpSpec,
        assistant_id: String,
        config: Option<Value>,
        context: Option<Value>,
        stream: bool,
    ) -> LangGraphSpec {
        LangGraphSpec {
            http: Arc::new(http),
            assistant_id,
            config,
            context,
            stream,
        }
    }

    /// The URL of `path` under the server's base URL, and how messages show it.
    fn at(&self, path: &[&str]) -> (reqwest::Url, String) {
        self.http.at(path)
    }
}

/// One case's conversation: its thread, the messages already seen, and whether the
/// graph waits on an `interrupt()`.
pub(crate) struct LangGraphSession {
    spec: Arc<LangGraphSpec>,
    http: HttpSession,
    thread: Option<String>,
    seen: Seen,
    interrupted: bool,
}

impl LangGraphSession {
    pub(crate) fn new(spec: Arc<LangGraphSpec>, scope: &CaseScope) -> LangGraphSession {
        LangGraphSession {
            http: HttpSession::new(spec.http.clone(), scope),
            spec,
            thread: None,
            seen: Seen::default(),
            interrupted: false,
        }
    }

    /// The W3C `traceparent` of the turn to come (see [`HttpSession::set_traceparent`]).
    pub(crate) fn set_traceparent(&mut self, traceparent: Option<&str>) {
        self.http.set_traceparent(traceparent);
    }

    /// The conversation's id as the server knows it: the thread, once made.
    pub(crate) fn conversation_id(&self) -> Option<&str> {
        self.thread.as_deref()
    }

    /// Sends one turn: the user's message as the run's input, or, while the graph waits
    /// on an interrupt, as the value it resumes with.
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        let thread = self.thread().await?;
        let mut body = Map::new();
        body.insert("assistant_id".into(), json!(self.spec.assistant_id));
        if self.interrupted {
            body.insert("command".into(), json!({"resume": request.input}));
        } else {
            body.insert(
                "input".into(),
                json!({"messages": [{"role": "user", "content": request.input}]}),
            );
        }
        for (key, value) in [
            ("config", &self.spec.config),
            ("context", &self.spec.context),
        ] {
            if let Some(v) = value {
                body.insert(key.into(), v.clone());
            }
        }
        let mut body = Value::Object(body);
        let (state, first_byte, shown) = if self.spec.stream {
            // `messages` events are partial chunks (the first is the first token); the
            // last `values` event is the state.
            body["stream_mode"] = json!(["values", "messages-tuple"]);
            let (url, shown) = self.spec.at(&["threads", &thread, "runs", "stream"]);
            let mut last = LastState::default();
            let read = self
                .http
                .post_events(&url, &shown, &body, |event| last.take(event, &shown))
                .await?;
            (last.state(&shown)?, read.first_byte, shown)
        } else {
            let (url, shown) = self.spec.at(&["threads", &thread, "runs", "wait"]);
            let answer = self.http.post(&url, &shown, &body).await?;
            (answer.value, answer.first_byte, shown)
        };
        let turn = reply_from_state(state, &mut self.seen, &shown)?;
        self.interrupted = turn.awaiting_input == Some(true);
        Ok(Timed {
            value: turn,
            first_byte,
        })
    }

    /// The case's thread, created on its first turn.
    async fn thread(&mut self) -> Result<String, AgentError> {
        if let Some(t) = &self.thread {
            return Ok(t.clone());
        }
        let (url, shown) = self.spec.at(&["threads"]);
        let answer = self.http.post(&url, &shown, &json!({})).await?.value;
        let id = answer["thread_id"]
            .as_str()
            .ok_or_else(|| shape(&shown, "a thread with a `thread_id`", &answer))?
            .to_string();
        self.thread = Some(id.clone());
        Ok(id)
    }
}

/// The state a run's event stream ends with: its last `values` event; an `error` event
/// is the run's error, given as a state with `__error__`.
#[derive(Default)]
struct LastState {
    state: Option<Value>,
    /// The events' names, for the message when no `values` event came.
    names: Vec<String>,
}

impl LastState {
    fn take(&mut self, event: super::sse::Event, shown: &str) -> Result<Flow, AgentError> {
        let name = if event.event.is_empty() {
            "message"
        } else {
            event.event.as_str()
        };
        if self.names.len() < 20 {
            self.names.push(name.to_string());
        }
        let parse = |what| {
            serde_json::from_str::<Value>(&event.data)
                .map_err(|_| shape(shown, what, &Value::String(event.data.clone())))
        };
        Ok(match name {
            "values" => {
                self.state = Some(parse("JSON in each `values` event")?);
                Flow::More
            }
            "error" => {
                self.state = Some(json!({ "__error__": parse("JSON in an `error` event")? }));
                Flow::Done
            }
            // `messages` (`messages-tuple`): a message chunk and its metadata.
            n if n == "messages" || n.starts_with("messages/") => Flow::Token,
            _ => Flow::More,
        })
    }

    fn state(self, shown: &str) -> Result<Value, AgentError> {
        self.state.ok_or_else(|| {
            shape(
                shown,
                "a `values` event in the run's event stream",
                &Value::String(format!("events: {}", self.names.join(", "))),
            )
        })
    }
}

/// The messages of the thread's state already taken into a reply: by id, and by count
/// for messages without one.
#[derive(Default)]
struct Seen {
    ids: HashSet<String>,
    count: usize,
}

fn shape(shown: &str, expected: &'static str, body: &Value) -> AgentError {
    AgentError::LangGraphShape {
        shown: shown.to_string(),
        expected,
        body: crate::util::clip(&body.to_string()),
    }
}

/// The reply of a turn from the thread's state after it: the messages new in this turn
/// (AI messages' text and tool calls, tool messages' results, usage), an interrupt as
/// awaiting input, the rest of the state as `data`.
fn reply_from_state(state: Value, seen: &mut Seen, shown: &str) -> Result<Reply, AgentError> {
    let Value::Object(mut state) = state else {
        return Err(shape(shown, "the thread's state (a JSON object)", &state));
    };
    if let Some(error) = state.get("__error__") {
        return Err(AgentError::LangGraphRun {
            shown: shown.to_string(),
            error: text_of(&error["error"]).unwrap_or_else(|| "error".into()),
            message: text_of(&error["message"]).unwrap_or_else(|| error.to_string()),
        });
    }
    let Some(Value::Array(messages)) = state.remove("messages") else {
        return Err(shape(
            shown,
            "a state with `messages` (an array; is the graph's state a MessagesState?)",
            &Value::Object(state),
        ));
    };
    let new: Vec<&Value> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| match m["id"].as_str() {
            Some(id) => !seen.ids.contains(id),
            None => *i >= seen.count,
        })
        .map(|(_, m)| m)
        .collect();
    seen.ids.extend(
        messages
            .iter()
            .filter_map(|m| m["id"].as_str().map(str::to_string)),
    );
    seen.count = messages.len();

    let mut reply = turn_messages(&new);
    let interrupt = state.remove("__interrupt__");
    if let Some(first) = interrupt.as_ref().and_then(|i| i.as_array()?.first()) {
        let value = &first["value"];
        reply.awaiting_input = Some(true);
        reply.input_hint = text_of(value).or_else(|| Some(value.to_string()));
        if reply.content.is_null() {
            reply.content = value.clone();
        }
    }
    if !state.is_empty() {
        reply.data = Some(Value::Object(state));
    }
    Ok(reply)
}

/// A turn's new messages as a reply: tool calls joined with the tool messages that
/// answer them, the last AI message's text, the AI messages' usage summed.
fn turn_messages(new: &[&Value]) -> Reply {
    let mut reply = Reply::default();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut usage: Option<Usage> = None;
    for m in new {
        match m["type"].as_str() {
            Some("ai") => {
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    if let Some(id) = call["id"].as_str() {
                        by_id.insert(id, reply.tool_calls.len());
                    }
                    let name = call["name"].as_str().unwrap_or_default();
                    reply
                        .tool_calls
                        .push(ToolCall::new(name, call["args"].clone()));
                }
                if let Some(text) = message_text(&m["content"]) {
                    reply.content = Value::String(text);
                }
                if let Some(u) = m.get("usage_metadata").filter(|u| u.is_object()) {
                    let sum = usage.get_or_insert_with(Usage::default);
                    sum.input_tokens += u["input_tokens"].as_u64().unwrap_or(0);
                    sum.output_tokens += u["output_tokens"].as_u64().unwrap_or(0);
                }
            }
            Some("tool") => {
                let result = m["content"].clone();
                let at = m["tool_call_id"].as_str().and_then(|id| by_id.get(id));
                let call = match at {
                    Some(&i) => &mut reply.tool_calls[i],
                    // A tool message no AI message of this turn asked for.
                    None => {
                        let name = m["name"].as_str().unwrap_or_default();
                        reply.tool_calls.push(ToolCall::new(name, Value::Null));
                        let last = reply.tool_calls.len() - 1;
                        &mut reply.tool_calls[last]
                    }
                };
                if m["status"] == "error" {
                    call.error = Some(result);
                } else {
                    call.result = Some(result);
                }
            }
            _ => {}
        }
    }
    reply.usage = usage;
    reply
}

/// A message's text: its `content` string, or its content blocks' text joined; `None`
/// when it has none (an AI message that only calls tools).
fn message_text(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ if b["type"] == "text" => b["text"].as_str(),
                _ => None,
            })
            .collect(),
        _ => String::new(),
    };
    (!text.is_empty()).then_some(text)
}

fn text_of(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ai(id: &str, content: Value, calls: Value, usage: (u64, u64)) -> Value {
        json!({"type": "ai", "id": id, "content": content, "tool_calls": calls,
               "usage_metadata": {"input_tokens": usage.0, "output_tokens": usage.1}})
    }

    #[test]
    fn only_the_new_messages_make_the_reply() {
        let mut seen = Seen::default();
        let first = json!({"messages": [
            {"type": "human", "id": "h1", "content": "weather?"},
            ai("a1", json!(""), json!([{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]), (10, 5)),
            {"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "Sunny", "status": "success"},
            ai("a2", json!([{"type": "text", "text": "It is "}, {"type": "text", "text": "sunny"}]), json!([]), (12, 3)),
        ]});
        let r = reply_from_state(first.clone(), &mut seen, "u").unwrap();
        assert_eq!(r.content, json!("It is sunny"));
        assert_eq!(
            r.tool_calls,
            vec![ToolCall::new("get_weather", json!({"city": "Paris"})).with_result(json!("Sunny"))]
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 22,
                output_tokens: 8
            })
        );
        let mut second = first;
        second["messages"].as_array_mut().unwrap().extend([
            json!({"type": "human", "id": "h2", "content": "thanks"}),
            ai("a3", json!("bye"), json!([]), (1, 1)),
        ]);
        let r = reply_from_state(second, &mut seen, "u").unwrap();
        assert_eq!((r.content, r.tool_calls.len()), (json!("bye"), 0));
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 1,
                output_tokens: 1
            })
        );
    }

    /// The state a whole event stream ends with, read as `post_events` reads it.
    fn last_state(bytes: &[u8], shown: &str) -> Result<Value, AgentError> {
        let mut parser = super::super::sse::Parser::default();
        let mut events = parser.push(bytes);
        events.extend(parser.finish());
        let mut last = LastState::default();
        for event in events {
            if let Flow::Done = last.take(event, shown)? {
                break;
            }
        }
        last.state(shown)
    }

    #[test]
    fn a_stream_ends_with_its_last_values_event_or_its_error() {
        let events = "event: metadata\r\ndata: {\"run_id\": \"r\"}\r\n\r\nevent: values\ndata: {\"messages\": []}\n\nevent: messages\ndata: [{}, {}]\n\nevent: values\ndata: {\"messages\":\ndata: [1]}\n\n";
        assert_eq!(
            last_state(events.as_bytes(), "u").unwrap(),
            json!({"messages": [1]})
        );
        let events = "event: values\ndata: {}\n\nevent: error\ndata: {\"error\": \"E\", \"message\": \"m\"}\n\n";
        assert_eq!(
            last_state(events.as_bytes(), "u").unwrap(),
            json!({"__error__": {"error": "E", "message": "m"}})
        );
        let e = last_state(b"event: metadata\ndata: {}\n\n", "u").unwrap_err();
        assert_eq!(
            e.to_string(),
            "LangGraph agent at u: expected a `values` event in the run's event stream, got: \"events: metadata\""
        );
    }

    #[test]
    fn an_interrupt_awaits_input_and_errors_and_shapes_are_case_errors() {
        let state = json!({"messages": [], "__interrupt__": [{"value": "Which city?", "id": "i"}]});
        let r = reply_from_state(state, &mut Seen::default(), "u").unwrap();
        assert_eq!(
            (r.awaiting_input, r.input_hint.as_deref(), r.content),
            (Some(true), Some("Which city?"), json!("Which city?"))
        );
        let e = reply_from_state(
            json!({"__error__": {"error": "ValueError", "message": "boom"}}),
            &mut Seen::default(),
            "http://x/threads/t/runs/wait",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "LangGraph agent at http://x/threads/t/runs/wait: the run failed: ValueError: boom"
        );
        let e = reply_from_state(json!({"answer": 1}), &mut Seen::default(), "u").unwrap_err();
        assert_eq!(
            e.to_string(),
            "LangGraph agent at u: expected a state with `messages` (an array; is the graph's state a MessagesState?), got: {\"answer\":1}"
        );
    }
}
