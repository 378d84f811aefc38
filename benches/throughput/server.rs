//! The agent under test: an async HTTP/1.1 server on 127.0.0.1 with keep-alive.
//!
//! A path is `/delay/<ms>` and then the route of the protocol it speaks; the turn's
//! answer (never a thread's creation or an agent card) comes `<ms>` milliseconds after
//! the request. Each protocol answers `turn <n>: <input>`, the user's input read from
//! its own request body, so that a `contains` check fails when agentest maps a request
//! or an answer wrongly:
//!
//! - `/delay/<ms>`: agentest's own protocol (`type = "http"`): `{"content": "turn <n>:
//!   <input>", "awaiting_input": true, "data": {"turn": <n>}}`; a repeated case's request
//!   (`metadata.repeat`) gets ` (repeat <r>)` after the input, so a case can pass on some
//!   repeats and fail on others.
//! - `/delay/<ms>/langgraph`: a LangGraph Agent Server (`type = "langgraph"`):
//!   `POST /threads`, then `POST /threads/<id>/runs/wait` answered with the thread's
//!   whole state, or `/runs/stream` with `values` and `messages` events.
//! - `/delay/<ms>/a2a`: an A2A 1.0 agent (`type = "a2a"`): its card at
//!   `/.well-known/agent-card.json` names the JSON-RPC endpoint `/rpc`, where
//!   `SendMessage` is answered with a completed Task holding a text artifact.
//! - `/delay/<ms>/openai/v1/chat/completions`: an OpenAI-compatible chat endpoint
//!   (`format = "openai-chat"`): a `chat.completion`, or with `"stream": true`
//!   `chat.completion.chunk` events and `data: [DONE]`.
//! - `/delay/<ms>/custom/chat`: an API of its own (`format = "custom"`): `{"message",
//!   "conversation", "turn"}` in, `{"reply": {"text"}, "state", "usage"}` out.
//! - `/delay/<ms>/traced/<port>`: agentest's own protocol from a traced agent
//!   (`traces = true`): after the delay and before answering, it exports the turn's ten
//!   spans as OTLP/JSON to `http://127.0.0.1:<port>/v1/traces` (agentest's receiver at
//!   its `[traces] listen`), in the trace of the request's `traceparent` header, as an
//!   instrumented agent flushing at the end of its request does; see [`turn_spans`].
//!   A request without a valid `traceparent`, or an export the receiver refuses, is
//!   answered 4xx/5xx.
//!
//! A request that does not have its protocol's shape is answered 4xx (or a JSON-RPC
//! error), so the run fails rather than measuring a wrong exchange.
//!
//! It counts connections and requests and the most requests it held at once, so a
//! bench can tell whether the client reused its connections and reached the
//! concurrency it asked for.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
pub struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    /// Span exports the trace receiver accepted.
    exports: AtomicU64,
    /// Their round trips, summed and the longest, in microseconds.
    export_micros: AtomicU64,
    export_max_micros: AtomicU64,
}

/// What the server saw since the last [`AgentServer::reset`].
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub connections: u64,
    pub requests: u64,
    pub max_in_flight: u64,
    /// Span exports (one per traced turn) the trace receiver accepted.
    pub exports: u64,
    /// Their mean and longest round trip (the time the reply waited for the receiver).
    pub export_mean: Duration,
    pub export_max: Duration,
}

/// What the connections share: the counters, and the conversations the stateful
/// protocols keep (LangGraph threads, A2A contexts).
struct Shared {
    addr: SocketAddr,
    stats: Stats,
    /// Ids of threads, contexts, tasks and messages.
    next_id: AtomicU64,
    /// Each LangGraph thread's messages.
    threads: Mutex<HashMap<String, Vec<Value>>>,
    /// Each A2A context's turns so far.
    contexts: Mutex<HashMap<String, u64>>,
    /// The traced route's OTLP exporter: one keep-alive client, as an SDK has.
    exporter: reqwest::Client,
}

impl Shared {
    fn id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}

pub struct AgentServer {
    shared: Arc<Shared>,
    // Kept alive for as long as the server is used; dropping it stops the server.
    _runtime: tokio::runtime::Runtime,
}

impl AgentServer {
    pub fn start() -> AgentServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bench-agent")
            .enable_all()
            .build()
            .expect("start the agent server's runtime");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            addr,
            stats: Stats::default(),
            next_id: AtomicU64::new(1),
            threads: Mutex::default(),
            contexts: Mutex::default(),
            exporter: exporter(),
        });
        let serving = shared.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                serving.stats.connections.fetch_add(1, Ordering::Relaxed);
                let shared = serving.clone();
                tokio::spawn(async move {
                    let _ = connection(stream, &shared).await;
                });
            }
        });
        AgentServer {
            shared,
            _runtime: runtime,
        }
    }

    /// The URL of an agent that answers after `latency`, in agentest's own protocol.
    pub fn url(&self, latency: Duration) -> String {
        format!("http://{}/delay/{}", self.shared.addr, latency.as_millis())
    }

    /// The URL of `route` (`langgraph`, `a2a`, `openai/v1/chat/completions`,
    /// `custom/chat`) of an agent that answers after `latency`.
    pub fn route_url(&self, latency: Duration, route: &str) -> String {
        format!("{}/{route}", self.url(latency))
    }

    pub fn reset(&self) {
        let stats = &self.shared.stats;
        stats.connections.store(0, Ordering::SeqCst);
        stats.requests.store(0, Ordering::SeqCst);
        stats.max_in_flight.store(0, Ordering::SeqCst);
        stats.exports.store(0, Ordering::SeqCst);
        stats.export_micros.store(0, Ordering::SeqCst);
        stats.export_max_micros.store(0, Ordering::SeqCst);
        self.shared.threads.lock().expect("threads").clear();
        self.shared.contexts.lock().expect("contexts").clear();
    }

    pub fn seen(&self) -> Seen {
        let stats = &self.shared.stats;
        Seen {
            connections: stats.connections.load(Ordering::SeqCst),
            requests: stats.requests.load(Ordering::SeqCst),
            max_in_flight: stats.max_in_flight.load(Ordering::SeqCst),
            exports: stats.exports.load(Ordering::SeqCst),
            export_mean: Duration::from_micros(
                stats.export_micros.load(Ordering::SeqCst)
                    / stats.exports.load(Ordering::SeqCst).max(1),
            ),
            export_max: Duration::from_micros(stats.export_max_micros.load(Ordering::SeqCst)),
        }
    }
}

/// A request as the routes need it.
struct Incoming<'a> {
    method: &'a str,
    /// The path after `/delay/<ms>/`, without its query.
    route: &'a str,
    delay: u64,
    /// The `A2A-Version` header's value.
    a2a_version: Option<&'a str>,
    /// The `traceparent` header's value.
    traceparent: Option<&'a str>,
    body: &'a [u8],
}

/// An answer: a JSON body, or an event stream sent chunked (as servers stream them).
struct Answer {
    status: u16,
    body: Body,
}

enum Body {
    Json(Value),
    /// Each string one whole event (its lines and the blank line after them).
    Events(Vec<String>),
}

impl Answer {
    fn json(value: Value) -> Answer {
        Answer {
            status: 200,
            body: Body::Json(value),
        }
    }

    fn error(status: u16, why: &str) -> Answer {
        Answer {
            status,
            body: Body::Json(json!({"detail": why})),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            404 => "Not Found",
            502 => "Bad Gateway",
            _ => "Unprocessable Entity",
        };
        match &self.body {
            Body::Json(v) => {
                let text = v.to_string();
                let mut out = format!(
                    "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    self.status,
                    text.len()
                )
                .into_bytes();
                out.extend_from_slice(text.as_bytes());
                out
            }
            Body::Events(events) => {
                let mut out = format!(
                    "HTTP/1.1 {} {reason}\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
                    self.status
                );
                for e in events {
                    out.push_str(&format!("{:x}\r\n{e}\r\n", e.len()));
                }
                out.push_str("0\r\n\r\n");
                out.into_bytes()
            }
        }
    }
}

/// Serves one keep-alive connection until the client closes it.
async fn connection(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let stats = &shared.stats;
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let mut words = line.split(' ');
        let method = words.next().unwrap_or("GET").to_string();
        let path = words.next().unwrap_or("/").to_string();
        let mut length = 0usize;
        let mut close = false;
        let mut a2a_version = None;
        let mut traceparent = None;
        loop {
            line.clear();
            if read.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let (name, value) = (name.trim(), value.trim());
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case("connection") {
                    close = value.eq_ignore_ascii_case("close");
                } else if name.eq_ignore_ascii_case("a2a-version") {
                    a2a_version = Some(value.to_string());
                } else if name.eq_ignore_ascii_case("traceparent") {
                    traceparent = Some(value.to_string());
                }
            }
        }
        let mut body = vec![0; length];
        read.read_exact(&mut body).await?;

        stats.requests.fetch_add(1, Ordering::Relaxed);
        let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let path = path.split('?').next().unwrap_or("/");
        let (delay, route) = match path.strip_prefix("/delay/") {
            Some(rest) => {
                let (ms, route) = rest.split_once('/').unwrap_or((rest, ""));
                (ms.parse::<u64>().unwrap_or(0), route)
            }
            None => (0, path.trim_start_matches('/')),
        };
        let incoming = Incoming {
            method: &method,
            route,
            delay,
            a2a_version: a2a_version.as_deref(),
            traceparent: traceparent.as_deref(),
            body: &body,
        };
        let answer = respond(&incoming, shared).await;
        let written = write.write_all(&answer.bytes()).await;
        stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        written?;
        if close {
            return Ok(());
        }
    }
}

/// The answer to one request, by its route; a turn's answer after the route's delay.
async fn respond(r: &Incoming<'_>, shared: &Shared) -> Answer {
    let segments: Vec<&str> = r.route.split('/').filter(|s| !s.is_empty()).collect();
    // Requests that set up a conversation answer at once: the latency is the agent's
    // reply's, and an Agent Server creates a thread or serves its card without a model.
    let turn = !matches!(
        segments.as_slice(),
        ["langgraph", "threads"]
            | ["a2a", ".well-known", "agent-card.json"]
            | ["eliza", "api", "agents"]
            | ["eliza", "api", "messaging", "sessions"]
    );
    if turn && r.delay > 0 {
        tokio::time::sleep(Duration::from_millis(r.delay)).await;
    }
    let request: Value = serde_json::from_slice(r.body).unwrap_or(Value::Null);
    match (r.method, segments.as_slice()) {
        ("POST", []) => Answer::json(agentest(&request)),
        ("POST", ["traced", port]) => traced(shared, r, &request, port).await,
        ("POST", ["langgraph", "threads"]) => {
            let id = shared.id("thread");
            shared
                .threads
                .lock()
                .expect("threads")
                .insert(id.clone(), Vec::new());
            Answer::json(json!({"thread_id": id, "status": "idle", "metadata": {}, "values": null}))
        }
        ("POST", ["langgraph", "threads", id, "runs", mode @ ("wait" | "stream")]) => {
            langgraph_run(shared, id, &request, *mode == "stream")
        }
        ("GET", ["a2a", ".well-known", "agent-card.json"]) => Answer::json(a2a_card(shared, r)),
        ("POST", ["a2a", "rpc"]) => a2a_rpc(shared, r, &request),
        ("POST", ["openai", "v1", "chat", "completions"]) => openai_chat(shared, &request),
        ("POST", ["custom", "chat"]) => custom(&request),
        ("GET", ["eliza", "api", "agents"]) => Answer::json(
            json!({"success": true, "data": {"agents": [{"id": ELIZA_AGENT, "name": "Bench", "status": "active"}]}}),
        ),
        ("POST", ["eliza", "api", "messaging", "sessions"]) => eliza_session(shared, &request),
        ("POST", ["eliza", "api", "messaging", "sessions", id, "messages"]) => {
            eliza_message(shared, id, &request)
        }
        _ => Answer::error(404, &format!("no route {} /{}", r.method, r.route)),
    }
}

/// The one agent of the bench's ElizaOS server.
const ELIZA_AGENT: &str = "6c5cf7c4-5a4e-4d0e-9a59-0d0c3e2b7a11";

/// An ElizaOS messaging session for the bench's agent (kept as the thread of its turns).
fn eliza_session(shared: &Shared, request: &Value) -> Answer {
    if request["agentId"] != ELIZA_AGENT || !request["userId"].is_string() {
        return Answer::error(400, "expected agentId (the Bench agent's) and userId");
    }
    let id = shared.id("session");
    shared
        .threads
        .lock()
        .expect("threads")
        .insert(id.clone(), Vec::new());
    Answer::json(json!({"sessionId": id, "agentId": ELIZA_AGENT, "userId": request["userId"]}))
}

/// A message in an ElizaOS session, `transport: "http"`: the agent's reply as
/// `agentResponse`.
fn eliza_message(shared: &Shared, session: &str, request: &Value) -> Answer {
    let (Some(input), Some("http")) = (request["content"].as_str(), request["transport"].as_str())
    else {
        return Answer::error(400, "expected content and transport \"http\"");
    };
    let turn = {
        let mut threads = shared.threads.lock().expect("threads");
        let Some(messages) = threads.get_mut(session) else {
            return Answer::error(404, &format!("no session {session}"));
        };
        messages.push(Value::String(input.to_string()));
        messages.len() as u64
    };
    Answer::json(json!({
        "success": true,
        "userMessage": {"content": input},
        "agentResponse": {"text": said(turn, input), "actions": ["REPLY"], "thought": "answer"},
    }))
}

/// `turn <n>: <input>`.
fn said(turn: u64, input: &str) -> String {
    format!("turn {turn}: {input}")
}

/// agentest's own protocol.
fn agentest(request: &Value) -> Value {
    let turn = request["turn"].as_u64().unwrap_or(0);
    let input = request["input"].as_str().unwrap_or("");
    let content = match request["metadata"]["repeat"].as_u64() {
        Some(r) => format!("{} (repeat {r})", said(turn, input)),
        None => said(turn, input),
    };
    json!({
        "content": content,
        "awaiting_input": true,
        "data": {"turn": turn},
    })
}

/// One LangGraph run on a thread: the user's message and the graph's answer appended to
/// the thread's messages; the state after it, whole (`/runs/wait`) or as the events
/// `langgraph dev` streams for `stream_mode: ["values", "messages-tuple"]`.
fn langgraph_run(shared: &Shared, thread: &str, request: &Value, stream: bool) -> Answer {
    if request["assistant_id"] != "agent" {
        return Answer::error(422, "expected assistant_id \"agent\"");
    }
    let message = &request["input"]["messages"][0];
    let (Some("user"), Some(input)) = (message["role"].as_str(), message["content"].as_str())
    else {
        return Answer::error(
            422,
            "expected input.messages = [{\"role\": \"user\", \"content\": ...}]",
        );
    };
    if stream && request["stream_mode"] != json!(["values", "messages-tuple"]) {
        return Answer::error(422, "expected stream_mode [\"values\", \"messages-tuple\"]");
    }
    let (human, ai) = (shared.id("human"), shared.id("ai"));
    let (before, after) = {
        let mut threads = shared.threads.lock().expect("threads");
        let Some(messages) = threads.get_mut(thread) else {
            return Answer::error(404, &format!("no thread {thread}"));
        };
        let turn = messages.len() as u64 / 2 + 1;
        messages.push(json!({"type": "human", "id": human, "content": input,
                             "additional_kwargs": {}, "response_metadata": {}}));
        let before = json!({"messages": messages.clone()});
        messages.push(json!({"type": "ai", "id": ai, "content": said(turn, input),
                             "tool_calls": [], "invalid_tool_calls": [],
                             "additional_kwargs": {}, "response_metadata": {"finish_reason": "stop"},
                             "usage_metadata": {"input_tokens": 12, "output_tokens": 6, "total_tokens": 18}}));
        (before, json!({"messages": messages.clone()}))
    };
    if !stream {
        return Answer::json(after);
    }
    let run = shared.id("run");
    let ai_message = after["messages"].as_array().and_then(|m| m.last()).cloned();
    let events = vec![
        format!(
            "event: metadata\ndata: {}\n\n",
            json!({"run_id": run, "attempt": 1})
        ),
        format!("event: values\ndata: {before}\n\n"),
        format!(
            "event: messages\ndata: {}\n\n",
            json!([ai_message, {"langgraph_node": "model", "thread_id": thread}])
        ),
        format!("event: values\ndata: {after}\n\n"),
    ];
    Answer {
        status: 200,
        body: Body::Events(events),
    }
}

/// An A2A 1.0 agent card with one JSON-RPC interface.
fn a2a_card(shared: &Shared, r: &Incoming) -> Value {
    json!({
        "name": "bench agent",
        "description": "answers turn <n>: <input>",
        "version": "1.0.0",
        "supportedInterfaces": [{
            "url": format!("http://{}/delay/{}/a2a/rpc", shared.addr, r.delay),
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }],
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "echoes", "tags": ["bench"]}],
    })
}

/// A2A 1.0 `SendMessage` over JSON-RPC: a completed Task whose artifact is the answer.
fn a2a_rpc(shared: &Shared, r: &Incoming, request: &Value) -> Answer {
    let id = request["id"].clone();
    let error = |code: i64, message: &str| {
        Answer::json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
    };
    if request["jsonrpc"] != "2.0" {
        return error(-32600, "expected a JSON-RPC 2.0 request");
    }
    if request["method"] != "SendMessage" {
        return error(-32601, "Method not found");
    }
    if r.a2a_version != Some("1.0") {
        return error(-32009, "expected the header A2A-Version: 1.0");
    }
    let message = &request["params"]["message"];
    let input = message["parts"][0]["text"].as_str();
    let (Some("ROLE_USER"), Some(input), Some(_)) = (
        message["role"].as_str(),
        input,
        message["messageId"].as_str(),
    ) else {
        return error(
            -32602,
            "expected a message with role ROLE_USER, a messageId and a text part",
        );
    };
    let context = message["contextId"]
        .as_str()
        .map_or_else(|| shared.id("ctx"), str::to_string);
    let turn = {
        let mut contexts = shared.contexts.lock().expect("contexts");
        let turns = contexts.entry(context.clone()).or_insert(0);
        *turns += 1;
        *turns
    };
    let task = shared.id("task");
    Answer::json(json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
        "id": task,
        "contextId": context,
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
        "artifacts": [{"artifactId": shared.id("artifact"), "name": "answer",
                       "parts": [{"text": said(turn, input)}]}],
        "history": [message],
    }}}))
}

/// An OpenAI-compatible chat endpoint: the turn is the number of user messages, the
/// input the last one's text.
fn openai_chat(shared: &Shared, request: &Value) -> Answer {
    let Some(messages) = request["messages"].as_array() else {
        return Answer::error(422, "expected messages");
    };
    let Some(model) = request["model"].as_str() else {
        return Answer::error(422, "expected a model");
    };
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let Some(input) = users.last() else {
        return Answer::error(422, "expected a user message");
    };
    let content = said(users.len() as u64, input);
    let id = shared.id("chatcmpl");
    let usage = json!({"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18});
    if request["stream"] != true {
        return Answer::json(json!({
            "id": id, "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": usage,
        }));
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    // The content in word-sized pieces, as a model streams its tokens.
    let mut rest = content.as_str();
    while !rest.is_empty() {
        let cut = rest[1..].find(' ').map_or(rest.len(), |i| i + 1);
        events.push(chunk(json!({"content": &rest[..cut]}), Value::Null));
        rest = &rest[cut..];
    }
    events.push(chunk(json!({}), json!("stop")));
    if request["stream_options"]["include_usage"] == true {
        events.push(
            json!({"id": id, "object": "chat.completion.chunk", "created": 1767225600,
                           "model": model, "choices": [], "usage": usage}),
        );
    }
    let mut events: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    events.push("data: [DONE]\n\n".into());
    Answer {
        status: 200,
        body: Body::Events(events),
    }
}

/// An API of its own: `{"message", "conversation", "turn"}` in.
fn custom(request: &Value) -> Answer {
    let (Some(input), Some(conversation), Some(turn)) = (
        request["message"].as_str(),
        request["conversation"].as_str(),
        request["turn"].as_u64(),
    ) else {
        return Answer::error(422, "expected {\"message\", \"conversation\", \"turn\"}");
    };
    Answer::json(json!({
        "reply": {"text": said(turn, input)},
        "state": {"conversation": conversation, "turn": turn},
        "usage": {"in": 12, "out": 6},
    }))
}

/// The traced route's HTTP client (plain HTTP to loopback; reqwest still wants a TLS
/// configuration, which is never used).
fn exporter() -> reqwest::Client {
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default TLS versions")
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .expect("build the exporter's client")
}

/// A traced agent's turn: its spans exported to the receiver at `port`, then the answer
/// of agentest's protocol.
async fn traced(shared: &Shared, r: &Incoming<'_>, request: &Value, port: &str) -> Answer {
    // `00-<trace id>-<parent span id>-<flags>`.
    let parts: Vec<&str> = r.traceparent.unwrap_or("").split('-').collect();
    let (trace_id, parent) = match parts.as_slice() {
        ["00", trace, span, _] if trace.len() == 32 && span.len() == 16 => (*trace, *span),
        _ => return Answer::error(422, "expected a W3C traceparent header"),
    };
    let input = request["input"].as_str().unwrap_or("");
    let body = turn_spans(shared, trace_id, parent, input);
    let url = format!("http://127.0.0.1:{port}/v1/traces");
    // Twice at most: a kept-alive connection to the previous run's receiver (the
    // agentest process that has exited) fails once.
    let mut why = String::new();
    for _ in 0..2 {
        let sent = std::time::Instant::now();
        match shared.exporter.post(&url).json(&body).send().await {
            Ok(response) if response.status().is_success() => {
                let took = sent.elapsed().as_micros() as u64;
                let stats = &shared.stats;
                stats.exports.fetch_add(1, Ordering::Relaxed);
                stats.export_micros.fetch_add(took, Ordering::Relaxed);
                stats.export_max_micros.fetch_max(took, Ordering::Relaxed);
                return Answer::json(agentest(request));
            }
            Ok(response) => {
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                return Answer::error(502, &format!("the receiver answered {status}: {text}"));
            }
            Err(e) => why = e.to_string(),
        }
    }
    Answer::error(502, &format!("failed to export the spans: {why}"))
}

/// An OTLP/JSON `ExportTraceServiceRequest` with one turn's ten spans in `trace_id`, as
/// GenAI-instrumented agents export them: the root `invoke_agent` (its parent the span
/// of agentest's `traceparent`), two `chat` model calls with token counts, two
/// `execute_tool` calls (`lookup` with the input as its `query`, then `format_reply`),
/// and the HTTP, database and rendering spans under them.
fn turn_spans(shared: &Shared, trace_id: &str, parent: &str, input: &str) -> Value {
    let base = shared.next_id.fetch_add(1, Ordering::Relaxed) << 4;
    let id = |k: u64| format!("{:016x}", 0x5000_0000_0000_0000 | base | k);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let start = now - 100_000_000;
    let s = |v: &str| json!({"stringValue": v});
    let int = |v: i64| json!({"intValue": v.to_string()});
    let attrs = |pairs: Vec<(&str, Value)>| -> Value {
        pairs
            .into_iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect()
    };
    let lookup_args = json!({"query": input}).to_string();
    let lookup_result = json!({"found": true, "entries": [input]}).to_string();
    let reply = format!("turn 1: {input}");
    let format_args = json!({"text": input}).to_string();
    // A span: its index, its parent's (none: the span of agentest's `traceparent`), name,
    // kind, start and end in milliseconds into the turn, attributes.
    let span =
        |k: u64, up: Option<u64>, name: &str, kind: u8, from: u64, to: u64, attributes: Value| {
            json!({
                "traceId": trace_id,
                "spanId": id(k),
                "parentSpanId": up.map_or_else(|| parent.to_string(), id),
                "name": name,
                "kind": kind,
                "startTimeUnixNano": (start + from * 1_000_000).to_string(),
                "endTimeUnixNano": (start + to * 1_000_000).to_string(),
                "attributes": attributes,
                "status": {"code": 1},
            })
        };
    let spans = vec![
        span(
            0,
            None,
            "invoke_agent bench",
            1,
            0,
            100,
            attrs(vec![
                ("gen_ai.operation.name", s("invoke_agent")),
                ("gen_ai.agent.name", s("bench")),
            ]),
        ),
        span(
            1,
            Some(0),
            "chat bench-model",
            3,
            2,
            30,
            attrs(vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.request.model", s("bench-model")),
                ("gen_ai.usage.input_tokens", int(120)),
                ("gen_ai.usage.output_tokens", int(24)),
            ]),
        ),
        span(
            2,
            Some(1),
            "POST /v1/chat/completions",
            3,
            3,
            29,
            attrs(vec![
                ("http.request.method", s("POST")),
                ("http.response.status_code", int(200)),
            ]),
        ),
        span(
            3,
            Some(0),
            "execute_tool lookup",
            1,
            31,
            50,
            attrs(vec![
                ("gen_ai.operation.name", s("execute_tool")),
                ("gen_ai.tool.name", s("lookup")),
                ("gen_ai.tool.call.id", s("call_1")),
                ("gen_ai.tool.call.arguments", s(&lookup_args)),
                ("gen_ai.tool.call.result", s(&lookup_result)),
            ]),
        ),
        span(
            4,
            Some(3),
            "GET /index",
            3,
            32,
            40,
            attrs(vec![("http.request.method", s("GET"))]),
        ),
        span(
            5,
            Some(3),
            "SELECT entries",
            3,
            41,
            49,
            attrs(vec![("db.system.name", s("sqlite"))]),
        ),
        span(
            6,
            Some(0),
            "chat bench-model",
            3,
            51,
            85,
            attrs(vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.request.model", s("bench-model")),
                ("gen_ai.usage.input_tokens", int(180)),
                ("gen_ai.usage.output_tokens", int(12)),
            ]),
        ),
        span(
            7,
            Some(6),
            "POST /v1/chat/completions",
            3,
            52,
            84,
            attrs(vec![
                ("http.request.method", s("POST")),
                ("http.response.status_code", int(200)),
            ]),
        ),
        span(
            8,
            Some(0),
            "execute_tool format_reply",
            1,
            86,
            98,
            attrs(vec![
                ("gen_ai.operation.name", s("execute_tool")),
                ("gen_ai.tool.name", s("format_reply")),
                ("gen_ai.tool.call.id", s("call_2")),
                ("gen_ai.tool.call.arguments", s(&format_args)),
                ("gen_ai.tool.call.result", s(&reply)),
            ]),
        ),
        span(9, Some(8), "render", 1, 87, 97, attrs(vec![])),
    ];
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "bench-agent"}}]},
        "scopeSpans": [{"scope": {"name": "bench.agent", "version": "1.0.0"}, "spans": spans}],
    }]})
}
