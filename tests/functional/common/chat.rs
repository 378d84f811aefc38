//! A scripted chat-completions server on 127.0.0.1 (`POST /v1/chat/completions`, as
//! OpenAI-compatible APIs speak it), for the `llm` and `dynamic` tests.
//!
//! Each request is given a route by the server's router (by default [`by_user_message`]);
//! the server answers it with the next [`Action`] queued for its route (else for `*`),
//! and records it. A request with nothing left to answer gets a 400 that says so.

use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::{lock, read_request, Request, TcpServer};

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Action {
    /// A complete HTTP response.
    Http {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Waits, then does the inner action (past the client's timeout, usually).
    Slow(Duration, Box<Action>),
    /// Sends the headers with a `Content-Length` larger than what follows, half a body,
    /// then closes the connection.
    CutOff(String),
    /// Closes the connection without answering.
    Hangup,
}

/// Gives a request (its JSON body) the route whose queue answers it.
pub type Router = fn(&Value) -> String;

#[derive(Default)]
struct State {
    /// Queues of actions by route; `*` for anything without its own queue.
    scripts: HashMap<String, VecDeque<Action>>,
    /// Every request received, with its route, in arrival order.
    seen: Vec<(String, Request)>,
    /// When each request of `seen` arrived.
    arrived: Vec<std::time::Instant>,
}

/// The scripted server; stopped (port closed, connections shut) on drop.
pub struct ChatServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
    _server: TcpServer,
}

/// The default route: the first user message of a chat request, the `name` of a tool
/// call (live mode), else `*`.
pub fn by_user_message(body: &Value) -> String {
    if let Some(messages) = body["messages"].as_array() {
        if let Some(m) = messages.iter().find(|m| m["role"] == "user") {
            if let Some(s) = m["content"].as_str() {
                return s.to_string();
            }
        }
    }
    body["name"].as_str().unwrap_or("*").to_string()
}

impl ChatServer {
    /// A server that routes requests [`by_user_message`].
    pub fn start() -> ChatServer {
        ChatServer::routed(by_user_message)
    }

    /// A server that routes requests with `router`.
    pub fn routed(router: Router) -> ChatServer {
        let state = Arc::new(Mutex::new(State::default()));
        let server = {
            let state = state.clone();
            TcpServer::start(move |stream, _| serve(stream, router, &state))
        };
        ChatServer {
            port: server.port,
            state,
            _server: server,
        }
    }

    /// The base URL for `[llm] base_url`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Queues actions for the requests routed to `route`.
    pub fn script(&self, route: &str, actions: Vec<Action>) {
        lock(&self.state)
            .scripts
            .entry(route.to_string())
            .or_default()
            .extend(actions);
    }

    /// Queues, for the requests routed to `route`, a text answer for each of `contents`,
    /// in order, each reporting usage (10, 5).
    pub fn answer(&self, route: &str, contents: &[String]) {
        self.script(route, contents.iter().map(|c| text(c, (10, 5))).collect());
    }

    /// When each request so far arrived, in order.
    pub fn arrivals(&self) -> Vec<std::time::Instant> {
        lock(&self.state).arrived.clone()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.state)
            .seen
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The requests routed to `route`, in arrival order.
    pub fn requests_for(&self, route: &str) -> Vec<Request> {
        lock(&self.state)
            .seen
            .iter()
            .filter(|(r, _)| r == route)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The bodies of the requests routed to `route`, in arrival order.
    pub fn bodies(&self, route: &str) -> Vec<Value> {
        self.requests_for(route)
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        lock(&self.state).seen.len()
    }
}

fn serve(stream: TcpStream, router: Router, state: &Mutex<State>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let action = {
            let mut s = lock(state);
            let route = router(&request.body);
            let queue = if s.scripts.contains_key(&route) {
                s.scripts.get_mut(&route)
            } else {
                s.scripts.get_mut("*")
            };
            let action = queue.and_then(VecDeque::pop_front).unwrap_or_else(|| {
                status(
                    400,
                    json!({"error": {"message": format!("test server: no scripted reply left for {route:?}")}}),
                )
            });
            s.seen.push((route, request));
            s.arrived.push(std::time::Instant::now());
            action
        };
        if !perform(&mut writer, action) {
            return;
        }
    }
}

fn write_head(w: &mut TcpStream, code: u16, headers: &[(String, String)], len: usize) {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Whatever",
    };
    let mut head = format!("HTTP/1.1 {code} {reason}\r\nContent-Length: {len}\r\n");
    // JSON unless the action names its own type (an event stream).
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = w.write_all(head.as_bytes());
}

/// Does one action; false when the connection is closed afterwards.
fn perform(w: &mut TcpStream, action: Action) -> bool {
    match action {
        Action::Http {
            code,
            headers,
            body,
        } => {
            write_head(w, code, &headers, body.len());
            w.write_all(body.as_bytes()).is_ok() && w.flush().is_ok()
        }
        Action::Slow(d, inner) => {
            std::thread::sleep(d);
            perform(w, *inner)
        }
        Action::CutOff(body) => {
            write_head(w, 200, &[], body.len() + 100);
            let _ = w.write_all(&body.as_bytes()[..body.len() / 2]);
            let _ = w.flush();
            let _ = w.shutdown(Shutdown::Both);
            false
        }
        Action::Hangup => {
            let _ = w.shutdown(Shutdown::Both);
            false
        }
    }
}

// ---------------------------------------------------------------------------------------
// Scripted replies
// ---------------------------------------------------------------------------------------

/// A chat completion with volatile fields (`id`, `created`, `system_fingerprint`) that a
/// cassette must drop.
pub fn completion(message: Value, finish: &str, (prompt, out): (u64, u64)) -> Value {
    json!({
        "id": "chatcmpl-volatile-42",
        "object": "chat.completion",
        "created": 1_700_000_000u64,
        "system_fingerprint": "fp_volatile",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
    })
}

/// A 200 with this body.
/// An SSE answer of these `data:` payloads (a streamed chat completion).
pub fn sse(events: &[String]) -> Action {
    Action::Http {
        code: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        body: events.iter().map(|e| format!("data: {e}\n\n")).collect(),
    }
}

/// A `chat.completion.chunk` event's JSON carrying `delta`.
pub fn chunk(delta: Value) -> String {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        .to_string()
}

pub fn ok(body: Value) -> Action {
    status(200, body)
}

/// A text answer.
pub fn text(content: &str, usage: (u64, u64)) -> Action {
    ok(completion(
        json!({"role": "assistant", "content": content}),
        "stop",
        usage,
    ))
}

/// The `tool_calls` entry the model sends: arguments as a JSON string.
pub fn tool_call_json(id: &str, name: &str, args: &Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// An answer calling several tools at once: `(id, name, arguments)`.
pub fn calls(list: &[(&str, &str, Value)], usage: (u64, u64)) -> Action {
    let tool_calls: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| tool_call_json(id, name, args))
        .collect();
    ok(completion(
        json!({"role": "assistant", "content": null, "tool_calls": tool_calls}),
        "tool_calls",
        usage,
    ))
}

/// An answer calling one tool.
pub fn call(id: &str, name: &str, args: Value, usage: (u64, u64)) -> Action {
    calls(&[(id, name, args)], usage)
}

/// A response with this status and JSON body.
pub fn status(code: u16, body: Value) -> Action {
    Action::Http {
        code,
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// A 429, with a `Retry-After` header when given.
pub fn rate_limited(retry_after: Option<&str>) -> Action {
    let mut a = status(
        429,
        json!({"error": {"message": "Rate limit reached for test-model", "type": "requests"}}),
    );
    if let (Action::Http { headers, .. }, Some(r)) = (&mut a, retry_after) {
        headers.push(("Retry-After".into(), r.into()));
    }
    a
}

/// A 500.
pub fn server_error() -> Action {
    status(
        500,
        json!({"error": {"message": "upstream exploded", "type": "server_error"}}),
    )
}

/// A 200 whose body is JSON cut short.
pub fn garbage() -> Action {
    Action::Http {
        code: 200,
        headers: Vec::new(),
        body: "{\"choices\": [{\"message\": ".into(),
    }
}

/// `then`, after waiting `d`.
pub fn slow(d: Duration, then: Action) -> Action {
    Action::Slow(d, Box::new(then))
}

/// A text answer cut off halfway, the connection closed.
pub fn cut_off() -> Action {
    Action::CutOff(
        completion(
            json!({"role": "assistant", "content": "never whole"}),
            "stop",
            (1, 1),
        )
        .to_string(),
    )
}
