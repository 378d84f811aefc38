//! The OTLP/HTTP trace receiver: one server per process on loopback, `POST /v1/traces`,
//! and the routing of the spans it receives to the turns that wait for them.
//!
//! The server is hyper 1's HTTP/1.1 connection handler, with its `server` feature
//! turned on: reqwest already builds hyper, so this adds little to the build, and
//! exporters send what a hand-written reader would have to get right too (Node's sends
//! `Transfer-Encoding: chunked`; clients keep connections alive). It runs on a thread
//! of its own with a single-threaded runtime, so it outlives any one case's runtime
//! (the harness may run each case on its own) and never competes with the cases'
//! tasks.
//!
//! A turn registers before its request is sent ([`Receiver::expect`]), by the trace id
//! agentest propagates and, for agents that do not propagate it, the conversation's
//! session id. A span joins the turn whose trace id it has; a span of another trace
//! joins the turn whose session one of its `session_attributes` names, and from then
//! on so does every span of that trace (the attribute is often only on the agent's
//! top span). Spans of a trace no turn claims are counted as unmatched and held, within
//! a bound, in case a later span of their trace names a session (an exporter may send
//! a trace's children before its top span). After the reply,
//! [`TurnHandle::settle`] waits for the turn's spans to stop coming.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use super::otlp::{self, BodyLimits, Encoding};
use super::span::{Span, SpanId, TraceId};
use crate::errors::{OtlpError, TraceSetupError};

/// The path OTLP/HTTP exporters post traces to.
pub(crate) const TRACES_PATH: &str = "/v1/traces";

/// How much the receiver keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A request body's size, as sent and decompressed.
    pub(crate) body: BodyLimits,
    /// Spans kept per turn; more are counted in [`Collected::dropped`].
    pub(crate) spans_per_turn: usize,
    /// The spans kept per turn, in bytes (estimated); more are counted as dropped.
    pub(crate) bytes_per_turn: usize,
    /// Unmatched spans held in case a later span of their trace names a session.
    pub(crate) held_spans: usize,
    /// The same, in bytes (estimated).
    pub(crate) held_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body: BodyLimits::default(),
            spans_per_turn: 2_000,
            bytes_per_turn: 8 << 20,
            held_spans: 4_096,
            held_bytes: 8 << 20,
        }
    }
}

/// How the receiver is set up (`[traces]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReceiverConfig {
    /// What it keeps.
    pub(crate) limits: Limits,
    /// The span attributes that can name a turn's session, tried in order.
    pub(crate) session_attributes: Vec<String>,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            limits: Limits::default(),
            session_attributes: vec!["gen_ai.conversation.id".into(), "session.id".into()],
        }
    }
}

/// What a turn is known by, registered before its request is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnKey {
    /// The trace id agentest propagates for the turn (`traceparent`).
    pub(crate) trace_id: TraceId,
    /// The conversation's session id, for agents that do not propagate the trace.
    pub(crate) session: Option<String>,
    /// The parent span id agentest puts in `traceparent`, when it sends one: the span
    /// whose parent it is is the turn's root. Without it, a root is a span with no
    /// parent, or a parent not among the turn's spans.
    pub(crate) parent_span_id: Option<SpanId>,
}

/// A turn's spans, once they have settled.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Collected {
    /// The spans, by start time (then by arrival).
    pub(crate) spans: Vec<Span>,
    /// Spans that arrived over the turn's limits and were not kept.
    pub(crate) dropped: u64,
    /// Whether `settle_max` ran out before the spans settled (spans may be missing).
    pub(crate) timed_out: bool,
}

/// The receiver: a handle on the server (cheap to clone); the server stops when the
/// last handle is dropped.
#[derive(Clone)]
pub(crate) struct Receiver {
    inner: Arc<Inner>,
}

struct Inner {
    addr: SocketAddr,
    state: Arc<State>,
    /// Dropped with the last handle, which tells the server to stop.
    _stop: oneshot::Sender<()>,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("addr", &self.inner.addr)
            .finish_non_exhaustive()
    }
}

/// The process's receiver, started by the first call; later calls return the same one
/// whatever they ask (one receiver per process, shared by every case).
/// Also says whether this call started it.
pub(crate) fn shared(
    listen: SocketAddr,
    config: ReceiverConfig,
) -> Result<(Receiver, bool), TraceSetupError> {
    let mut shared = lock(&SHARED);
    if let Some(receiver) = shared.as_ref() {
        return Ok((receiver.clone(), false));
    }
    let receiver = Receiver::start(listen, config)?;
    *shared = Some(receiver.clone());
    Ok((receiver, true))
}

/// The process's receiver.
static SHARED: Mutex<Option<Receiver>> = Mutex::new(None);

/// The process's receiver, when one has started.
pub(crate) fn running() -> Option<Receiver> {
    lock(&SHARED).clone()
}

impl Receiver {
    /// Listens on `listen` and serves OTLP/HTTP there until the last handle is dropped.
    pub(crate) fn start(
        listen: SocketAddr,
        config: ReceiverConfig,
    ) -> Result<Receiver, TraceSetupError> {
        let listener =
            std::net::TcpListener::bind(listen).map_err(|source| TraceSetupError::Listen {
                addr: listen,
                source,
            })?;
        let start = |source| TraceSetupError::Start { source };
        let addr = listener.local_addr().map_err(start)?;
        listener.set_nonblocking(true).map_err(start)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(start)?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(start)?
        };
        let state = Arc::new(State {
            config,
            turns: Mutex::default(),
            logged: Mutex::default(),
        });
        let (stop, stopped) = oneshot::channel();
        let server = Arc::clone(&state);
        std::thread::Builder::new()
            .name("agentest-otlp".into())
            .spawn(move || runtime.block_on(serve(listener, server, stopped)))
            .map_err(start)?;
        Ok(Receiver {
            inner: Arc::new(Inner {
                addr,
                state,
                _stop: stop,
            }),
        })
    }

    /// The address it listens on (the port chosen, for `:0`).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// Registers a turn; its spans are kept until [`TurnHandle::settle`] (or the
    /// handle's drop).
    pub(crate) fn expect(&self, key: TurnKey) -> TurnHandle {
        let state = &self.inner.state;
        let notify = Arc::new(Notify::new());
        let mut turns = lock(&state.turns);
        let id = turns.next;
        turns.next += 1;
        turns.by_trace.insert(key.trace_id, id);
        if let Some(session) = &key.session {
            turns.by_session.insert(session.clone(), id);
        }
        let trace_id = key.trace_id;
        turns.buckets.insert(
            id,
            Bucket {
                traces: vec![trace_id],
                key,
                notify: Arc::clone(&notify),
                spans: Vec::new(),
                bytes: 0,
                dropped: 0,
                dropped_root: false,
                last_arrival: None,
            },
        );
        // Spans sent before the turn was registered (an agent that reuses a trace).
        turns.adopt(trace_id, id, &state.config.limits);
        drop(turns);
        TurnHandle {
            state: Arc::clone(state),
            id,
            notify,
            done: false,
        }
    }

    /// How many spans have joined no turn so far.
    pub(crate) fn unmatched(&self) -> u64 {
        lock(&self.inner.state.turns).unmatched
    }
}

/// A registered turn.
#[derive(Debug)]
pub(crate) struct TurnHandle {
    state: Arc<State>,
    id: u64,
    notify: Arc<Notify>,
    /// Whether its bucket has been removed (by `settle`).
    done: bool,
}

impl TurnHandle {
    /// Names a session of the turn learned after it was registered (the thread or
    /// context an agent handed out in its answer): spans carrying it join the turn, those
    /// already held included.
    pub(crate) fn name_session(&self, session: &str) {
        let limits = &self.state.config.limits;
        let mut turns = lock(&self.state.turns);
        let turns = &mut *turns;
        if !turns.buckets.contains_key(&self.id) {
            return;
        }
        turns.by_session.insert(session.to_string(), self.id);
        let keys = &self.state.config.session_attributes;
        let named: Vec<TraceId> = turns
            .held
            .traces
            .iter()
            .filter(|(_, spans)| {
                spans.iter().any(|span| {
                    keys.iter()
                        .any(|k| span.text(k).as_deref() == Some(session))
                })
            })
            .map(|(trace, _)| *trace)
            .collect();
        for trace in named {
            turns.by_trace.insert(trace, self.id);
            if let Some(bucket) = turns.buckets.get_mut(&self.id) {
                bucket.traces.push(trace);
            }
            turns.adopt(trace, self.id, limits);
        }
    }

    /// Waits until the turn's spans have settled, then hands them over and forgets the
    /// turn (its trace's later spans count as unmatched).
    ///
    /// Settled: the spans form a whole tree (the root, and every span's parent), or no
    /// span has arrived for `settle` (counted from the later of this call and the last
    /// arrival) and either no span came at all or the turn's root span has arrived.
    /// `settle_max` bounds the wait.
    pub(crate) async fn settle(mut self, settle: Duration, settle_max: Duration) -> Collected {
        let start = Instant::now();
        let deadline = start + settle_max;
        let timed_out = loop {
            // Registered before looking, so an arrival between the look and the wait
            // still wakes it.
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some((last, root, whole)) = self.state.progress(self.id) else {
                break false;
            };
            // A whole tree (its root, and every span's parent) is settled at once: the
            // quiet period is for a turn whose spans are still coming.
            if whole {
                break false;
            }
            let now = Instant::now();
            let quiet_until = last.map_or(start, |last| last.max(start)) + settle;
            if now >= quiet_until && (last.is_none() || root) {
                break false;
            }
            if now >= deadline {
                break true;
            }
            let wake = if now < quiet_until {
                quiet_until.min(deadline)
            } else {
                // Quiet, but no root yet: only an arrival or the deadline changes that.
                deadline
            };
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(wake) => {}
            }
        };
        self.done = true;
        let Some(bucket) = self.state.close(self.id) else {
            return Collected::default();
        };
        let mut spans = bucket.spans;
        spans.sort_by_key(|s| s.start_unix_nano);
        Collected {
            spans,
            dropped: bucket.dropped,
            timed_out,
        }
    }
}

impl Drop for TurnHandle {
    fn drop(&mut self) {
        if !self.done {
            self.state.close(self.id);
        }
    }
}

/// What the server and the handles share.
struct State {
    config: ReceiverConfig,
    turns: Mutex<Turns>,
    /// The kinds of refused requests already reported on stderr.
    logged: Mutex<HashSet<&'static str>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Turns {
    next: u64,
    buckets: HashMap<u64, Bucket>,
    /// Each registered trace id, and each trace joined through a session attribute.
    by_trace: HashMap<TraceId, u64>,
    /// The latest turn registered with each session.
    by_session: HashMap<String, u64>,
    held: Held,
    closed: Closed,
    unmatched: u64,
}

/// A turn's spans so far.
struct Bucket {
    key: TurnKey,
    notify: Arc<Notify>,
    /// The turn's trace ids: its own, and those joined through a session attribute.
    traces: Vec<TraceId>,
    spans: Vec<Span>,
    bytes: usize,
    dropped: u64,
    /// Whether a dropped span could have been the root.
    dropped_root: bool,
    last_arrival: Option<Instant>,
}

impl Bucket {
    fn add(&mut self, span: Span, limits: &Limits, now: Instant) {
        self.last_arrival = Some(now);
        let size = approx_size(&span);
        if self.spans.len() >= limits.spans_per_turn || self.bytes + size > limits.bytes_per_turn {
            self.dropped += 1;
            // A dropped span may have been the root; without agentest's parent id
            // there is no telling, so any may have been (a turn this full is not
            // kept waiting for a root it may have dropped).
            self.dropped_root |= span.parent_span_id.is_none()
                || self.key.parent_span_id.is_none()
                || span.parent_span_id == self.key.parent_span_id;
            return;
        }
        self.bytes += size;
        self.spans.push(span);
    }

    /// Whether the turn's root span has arrived.
    /// Whether the turn's spans form a whole tree: its root (the span whose parent is
    /// the context agentest sent) has come, and every other span's parent is among them.
    /// A span ends before its parent and exporters send spans as they end, so nothing
    /// more is to come. A turn registered without that context never is.
    fn is_whole(&self) -> bool {
        if self.key.parent_span_id.is_none()
            || self.dropped_root
            || self.spans.is_empty()
            || !self.has_root()
        {
            return false;
        }
        let ids: HashSet<SpanId> = self.spans.iter().map(|s| s.span_id).collect();
        self.spans.iter().all(|s| match s.parent_span_id {
            None => true,
            Some(p) => ids.contains(&p) || Some(p) == self.key.parent_span_id,
        })
    }

    fn has_root(&self) -> bool {
        if self.dropped_root {
            return true;
        }
        match self.key.parent_span_id {
            Some(parent) => self
                .spans
                .iter()
                .any(|s| s.parent_span_id.is_none_or(|p| p == parent)),
            None => {
                let ids: HashSet<SpanId> = self.spans.iter().map(|s| s.span_id).collect();
                self.spans
                    .iter()
                    .any(|s| s.parent_span_id.is_none_or(|p| !ids.contains(&p)))
            }
        }
    }
}

/// Unmatched spans held by trace, oldest trace first out.
#[derive(Default)]
struct Held {
    traces: HashMap<TraceId, Vec<Span>>,
    /// Trace ids in the order they were first held (some may have been taken since).
    order: VecDeque<TraceId>,
    spans: usize,
    bytes: usize,
}

impl Held {
    fn hold(&mut self, span: Span, limits: &Limits) {
        self.spans += 1;
        self.bytes += approx_size(&span);
        let trace = span.trace_id;
        match self.traces.get_mut(&trace) {
            Some(spans) => spans.push(span),
            None => {
                self.order.push_back(trace);
                self.traces.insert(trace, vec![span]);
            }
        }
        while self.spans > limits.held_spans || self.bytes > limits.held_bytes {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            // The spans stay counted as unmatched; they can no longer join a turn.
            self.forget(oldest);
        }
        if self.order.len() > 2 * self.traces.len() + 64 {
            let traces = &self.traces;
            self.order.retain(|t| traces.contains_key(t));
        }
    }

    fn forget(&mut self, trace: TraceId) -> Vec<Span> {
        let spans = self.traces.remove(&trace).unwrap_or_default();
        self.spans -= spans.len();
        self.bytes -= spans.iter().map(approx_size).sum::<usize>();
        spans
    }
}

/// Trace ids of turns already settled: their late spans are unmatched, and are not
/// held for another turn to claim through a session attribute.
#[derive(Default)]
struct Closed {
    set: HashSet<TraceId>,
    order: VecDeque<TraceId>,
}

impl Closed {
    const REMEMBERED: usize = 4_096;

    fn insert(&mut self, trace: TraceId) {
        if self.set.insert(trace) {
            self.order.push_back(trace);
            if self.order.len() > Self::REMEMBERED {
                if let Some(oldest) = self.order.pop_front() {
                    self.set.remove(&oldest);
                }
            }
        }
    }
}

impl Turns {
    /// Moves the held spans of `trace` into turn `id`.
    fn adopt(&mut self, trace: TraceId, id: u64, limits: &Limits) {
        if !self.held.traces.contains_key(&trace) {
            return;
        }
        let spans = self.held.forget(trace);
        self.unmatched -= spans.len() as u64;
        if let Some(bucket) = self.buckets.get_mut(&id) {
            let now = Instant::now();
            for span in spans {
                bucket.add(span, limits, now);
            }
            bucket.notify.notify_waiters();
        }
    }
}

impl State {
    /// Hands each span to its turn, or counts it as unmatched.
    fn route(&self, spans: Vec<Span>) {
        let limits = &self.config.limits;
        let mut turns = lock(&self.turns);
        let turns = &mut *turns;
        // Each trace's turn: registered, joined earlier, or named now by a session
        // attribute on any span of the trace in this request.
        let mut routes: HashMap<TraceId, Option<u64>> = HashMap::new();
        let mut joined = Vec::new();
        for span in &spans {
            let route = routes
                .entry(span.trace_id)
                .or_insert_with(|| turns.by_trace.get(&span.trace_id).copied());
            if route.is_none() && !turns.closed.set.contains(&span.trace_id) {
                if let Some(id) = self.session_turn(turns, span) {
                    *route = Some(id);
                    joined.push((span.trace_id, id));
                }
            }
        }
        for (trace, id) in joined {
            turns.by_trace.insert(trace, id);
            if let Some(bucket) = turns.buckets.get_mut(&id) {
                bucket.traces.push(trace);
            }
            turns.adopt(trace, id, limits);
        }
        let now = Instant::now();
        let mut woken = HashSet::new();
        for span in spans {
            match routes.get(&span.trace_id).copied().flatten() {
                Some(id) => {
                    if let Some(bucket) = turns.buckets.get_mut(&id) {
                        bucket.add(span, limits, now);
                        woken.insert(id);
                    }
                }
                None => {
                    turns.unmatched += 1;
                    if !turns.closed.set.contains(&span.trace_id) {
                        turns.held.hold(span, limits);
                    }
                }
            }
        }
        for id in woken {
            if let Some(bucket) = turns.buckets.get(&id) {
                bucket.notify.notify_waiters();
            }
        }
    }

    /// The open turn whose session one of the span's session attributes names.
    fn session_turn(&self, turns: &Turns, span: &Span) -> Option<u64> {
        self.config
            .session_attributes
            .iter()
            .filter_map(|key| span.text(key))
            .find_map(|session| turns.by_session.get(&session).copied())
    }

    /// A turn's last arrival, whether its root has come, and whether its spans form a
    /// whole tree; `None` once it is closed.
    fn progress(&self, id: u64) -> Option<(Option<Instant>, bool, bool)> {
        let turns = lock(&self.turns);
        let bucket = turns.buckets.get(&id)?;
        Some((bucket.last_arrival, bucket.has_root(), bucket.is_whole()))
    }

    /// Forgets a turn, and hands over what it collected.
    fn close(&self, id: u64) -> Option<Bucket> {
        let mut turns = lock(&self.turns);
        let bucket = turns.buckets.remove(&id)?;
        for trace in &bucket.traces {
            if turns.by_trace.get(trace) == Some(&id) {
                turns.by_trace.remove(trace);
            }
            turns.closed.insert(*trace);
        }
        if let Some(session) = &bucket.key.session {
            if turns.by_session.get(session) == Some(&id) {
                turns.by_session.remove(session);
            }
        }
        Some(bucket)
    }

    /// Says on stderr why a request was refused, the first time for each kind of reason
    /// (an exporter retries, and sends every batch the same way).
    /// Whether it said it.
    fn log_once(&self, kind: &'static str, message: &dyn std::fmt::Display) -> bool {
        let first = lock(&self.logged).insert(kind);
        if first {
            eprintln!(
                "agentest: the trace receiver refused a request: {message} (later requests refused for this reason are not reported)"
            );
        }
        first
    }

    /// The response to one request.
    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if request.uri().path() != TRACES_PATH {
            let message = format!(
                "no such path {}: agentest receives OpenTelemetry traces only, at POST {TRACES_PATH}",
                request.uri().path()
            );
            let _ = self.log_once("path", &message);
            return text(StatusCode::NOT_FOUND, message);
        }
        if request.method() != Method::POST {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{TRACES_PATH} takes POST"),
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        let header = |name| {
            request
                .headers()
                .get(name)
                .map(|v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let content_type = header(CONTENT_TYPE).unwrap_or_default();
        let content_encoding = header(CONTENT_ENCODING);
        let encoding = match Encoding::from_content_type(&content_type) {
            Ok(encoding) => encoding,
            Err(e) => return self.refuse(None, &e),
        };
        let limits = self.config.limits.body;
        let too_large = OtlpError::TooLarge {
            what: "request body",
            limit: limits.body,
        };
        let declared = header(CONTENT_LENGTH).and_then(|n| n.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > limits.body as u64) {
            return self.refuse(Some(encoding), &too_large);
        }
        let body = match Limited::new(request.into_body(), limits.body)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return self.refuse(Some(encoding), &too_large);
            }
            // The client went away mid-body: nobody reads this.
            Err(e) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    format!("failed to read the body: {e}"),
                )
            }
        };
        match otlp::decode_limited(&body, &content_type, content_encoding.as_deref(), limits) {
            Ok(spans) => {
                self.route(spans);
                let mut response =
                    Response::new(Full::new(Bytes::from_static(otlp::success_body(encoding))));
                response.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(encoding.content_type()),
                );
                response
            }
            Err(e) => self.refuse(Some(encoding), &e),
        }
    }

    /// The response to a request refused for `e`: a `google.rpc.Status` in the
    /// request's encoding when it has one, else text.
    fn refuse(&self, encoding: Option<Encoding>, e: &OtlpError) -> Response<Full<Bytes>> {
        let _ = self.log_once(e.kind(), e);
        let status = match e {
            OtlpError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            OtlpError::ContentType(_) | OtlpError::ContentEncoding(_) => {
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            }
            _ => StatusCode::BAD_REQUEST,
        };
        let Some(encoding) = encoding else {
            return text(status, e.to_string());
        };
        let mut response = Response::new(Full::new(Bytes::from(otlp::error_body(
            encoding,
            &e.to_string(),
        ))));
        *response.status_mut() = status;
        response.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static(encoding.content_type()),
        );
        response
    }
}

fn text(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Accepts connections until `stop` fires (or its sender is dropped).
async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let state = Arc::clone(&state);
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let state = Arc::clone(&state);
                            async move { Ok::<_, Infallible>(state.answer(request).await) }
                        });
                        // A connection's error (a client gone mid-request) ends only it.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
                // Out of file descriptors, say: wait rather than spin.
                Err(e) => {
                    let _ = state.log_once("accept", &format_args!("failed to accept a connection: {e}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

/// A span's size in memory, estimated: what the per-turn byte limit counts.
fn approx_size(span: &Span) -> usize {
    std::mem::size_of::<Span>()
        + span.name.len()
        + span.service.as_ref().map_or(0, String::len)
        + span
            .attributes
            .iter()
            .map(|(k, v)| 32 + k.len() + value_size(v))
            .sum::<usize>()
}

fn value_size(v: &Value) -> usize {
    match v {
        Value::String(s) => 24 + s.len(),
        Value::Array(a) => 24 + a.iter().map(value_size).sum::<usize>(),
        Value::Object(o) => {
            48 + o
                .iter()
                .map(|(k, v)| 32 + k.len() + value_size(v))
                .sum::<usize>()
        }
        _ => 16,
    }
}

/// A lock that a panic elsewhere does not poison: the data stays consistent (each
/// update is made whole under the lock) and the receiver never panics.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant as StdInstant;

    fn fixture(name: &str) -> (Vec<u8>, Value) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/otlp/");
        let body = std::fs::read(format!("{dir}{name}.body")).unwrap();
        let headers =
            serde_json::from_slice(&std::fs::read(format!("{dir}{name}.headers.json")).unwrap())
                .unwrap();
        (body, headers)
    }

    const PYTHON_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const NODE_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    fn trace_id(hex: &str) -> TraceId {
        TraceId(std::array::from_fn(|i| {
            u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()
        }))
    }

    fn span_id(hex: &str) -> SpanId {
        SpanId(std::array::from_fn(|i| {
            u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()
        }))
    }

    fn start(config: ReceiverConfig) -> Receiver {
        Receiver::start("127.0.0.1:0".parse().unwrap(), config).unwrap()
    }

    fn key(trace: &str, session: Option<&str>, parent: Option<&str>) -> TurnKey {
        TurnKey {
            trace_id: trace_id(trace),
            session: session.map(str::to_owned),
            parent_span_id: parent.map(span_id),
        }
    }

    /// A span for [`body`]: its id, its parent's, its string attributes.
    type TestSpan<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, &'a str)]);

    /// An OTLP/JSON body of one trace.
    fn body(trace: &str, spans: &[TestSpan]) -> Vec<u8> {
        let spans: Vec<Value> = spans
            .iter()
            .enumerate()
            .map(|(i, (id, parent, attributes))| {
                json!({
                    "traceId": trace,
                    "spanId": id,
                    "parentSpanId": parent.unwrap_or(""),
                    "name": format!("span {id}"),
                    "startTimeUnixNano": (1_000 + i).to_string(),
                    "attributes": attributes.iter().map(|(k, v)| json!({"key": k, "value": {"stringValue": v}})).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})).unwrap()
    }

    struct Answer {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    }

    async fn post_to(
        receiver: &Receiver,
        path: &str,
        body: Vec<u8>,
        content_type: &str,
        content_encoding: Option<&str>,
    ) -> Answer {
        let client = crate::util::http::client_builder().build().unwrap();
        let mut request = client
            .post(format!("http://{}{path}", receiver.addr()))
            .header("content-type", content_type)
            .body(body);
        if let Some(e) = content_encoding {
            request = request.header("content-encoding", e);
        }
        let response = request.send().await.unwrap();
        Answer {
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default(),
            body: response.bytes().await.unwrap().to_vec(),
        }
    }

    async fn post(receiver: &Receiver, body: Vec<u8>) -> Answer {
        post_to(receiver, TRACES_PATH, body, "application/json", None).await
    }

    async fn post_fixture(receiver: &Receiver, name: &str) -> Answer {
        let (body, headers) = fixture(name);
        post_to(
            receiver,
            TRACES_PATH,
            body,
            headers["content-type"].as_str().unwrap(),
            headers["content-encoding"].as_str(),
        )
        .await
    }

    const SETTLE_MAX: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn a_posted_fixture_joins_its_turn_and_later_spans_are_unmatched() {
        let receiver = start(ReceiverConfig::default());
        let turn = receiver.expect(key(PYTHON_TRACE, None, None));
        let answer = post_fixture(&receiver, "python-protobuf-gzip").await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.content_type, "application/x-protobuf");
        assert!(answer.body.is_empty(), "{:?}", answer.body);

        let collected = turn.settle(Duration::from_millis(100), SETTLE_MAX).await;
        let names: Vec<&str> = collected.spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "invoke_agent fixture",
                "execute_tool lookup",
                "chat test-model"
            ]
        );
        assert_eq!((collected.dropped, collected.timed_out), (0, false));
        assert_eq!(receiver.unmatched(), 0);

        // The turn is over: the same spans again join nothing.
        assert_eq!(post_fixture(&receiver, "python-protobuf").await.status, 200);
        assert_eq!(receiver.unmatched(), 3);
        let again = receiver.expect(key(NODE_TRACE, None, None));
        let collected = again.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert!(collected.spans.is_empty());
    }

    #[tokio::test]
    async fn json_is_answered_in_json_and_spans_of_no_turn_are_counted() {
        let receiver = start(ReceiverConfig::default());
        let answer = post_fixture(&receiver, "node-json-gzip").await;
        assert_eq!(answer.status, 200);
        assert_eq!(answer.content_type, "application/json");
        assert_eq!(answer.body, b"{}");
        assert_eq!(receiver.unmatched(), 2);
        // A session attribute naming no open turn attaches nowhere either.
        let other = "11111111111111111111111111111111";
        let orphan = body(
            other,
            &[("1111111111111111", None, &[("session.id", "nobody")])],
        );
        assert_eq!(post(&receiver, orphan).await.status, 200);
        assert_eq!(receiver.unmatched(), 3);
        // A turn registered late for a trace still gets the trace's spans.
        let turn = receiver.expect(key(NODE_TRACE, None, None));
        assert_eq!(receiver.unmatched(), 1);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!(collected.spans.len(), 2);
    }

    #[tokio::test]
    async fn spans_of_another_trace_join_the_turn_their_session_names() {
        let receiver = start(ReceiverConfig::default());
        let unrelated =
            receiver.expect(key("22222222222222222222222222222222", Some("other"), None));
        let turn = receiver.expect(key(
            "33333333333333333333333333333333",
            Some("sess-42"),
            Some("3333333333333333"),
        ));
        // The Node fixture's root has `session.id = sess-42`; its child, sent first in
        // the same request, has no session attribute.
        assert_eq!(post_fixture(&receiver, "node-json").await.status, 200);
        // A later span of that trace, with no session attribute, follows it.
        let late = body(
            NODE_TRACE,
            &[("0000000000000abc", Some("1f2e3d4c5b6a7988"), &[])],
        );
        assert_eq!(post(&receiver, late).await.status, 200);
        assert_eq!(receiver.unmatched(), 0);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        let ids: Vec<String> = collected.spans.iter().map(|s| s.span_id.hex()).collect();
        // By start time: the hand-made span says it started 1 µs after the epoch.
        assert_eq!(
            ids,
            ["0000000000000abc", "1f2e3d4c5b6a7988", "a1b2c3d4e5f60718"]
        );
        assert!(!collected.timed_out);
        let collected = unrelated
            .settle(Duration::from_millis(10), SETTLE_MAX)
            .await;
        assert!(collected.spans.is_empty());
    }

    #[tokio::test]
    async fn held_spans_join_when_a_later_request_names_their_session() {
        let receiver = start(ReceiverConfig::default());
        let turn = receiver.expect(key(
            "44444444444444444444444444444444",
            Some("conv-9"),
            None,
        ));
        let trace = "55555555555555555555555555555555";
        let child = body(
            trace,
            &[("5555555555555552", Some("5555555555555551"), &[])],
        );
        assert_eq!(post(&receiver, child).await.status, 200);
        assert_eq!(receiver.unmatched(), 1);
        let root = body(
            trace,
            &[(
                "5555555555555551",
                None,
                &[("gen_ai.conversation.id", "conv-9")],
            )],
        );
        assert_eq!(post(&receiver, root).await.status, 200);
        assert_eq!(receiver.unmatched(), 0);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!(collected.spans.len(), 2);
    }

    #[tokio::test]
    async fn a_session_named_after_registering_takes_its_held_spans() {
        let receiver = start(ReceiverConfig::default());
        let turn = receiver.expect(key("77777777777777777777777777777777", None, None));
        // The agent's own trace, tied to the conversation only by the thread it made.
        let trace = "88888888888888888888888888888888";
        let spans = body(
            trace,
            &[("8888888888888881", None, &[("session.id", "thread-3")])],
        );
        assert_eq!(post(&receiver, spans).await.status, 200);
        assert_eq!(receiver.unmatched(), 1);
        turn.name_session("thread-3");
        assert_eq!(receiver.unmatched(), 0);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!(collected.spans.len(), 1);
    }

    #[tokio::test]
    async fn settle_returns_after_the_quiet_period_when_no_span_comes() {
        let receiver = start(ReceiverConfig::default());
        let turn = receiver.expect(key(PYTHON_TRACE, None, None));
        let started = StdInstant::now();
        let collected = turn.settle(Duration::from_millis(200), SETTLE_MAX).await;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(200) && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert_eq!(collected, Collected::default());
    }

    #[tokio::test]
    async fn settle_waits_for_a_late_root_span() {
        let receiver = start(ReceiverConfig::default());
        let trace = "66666666666666666666666666666666";
        // agentest's own span (in `traceparent`) is 6666666666666660; the agent's root is
        // ...61, its child ...62.
        let turn = receiver.expect(key(trace, None, Some("6666666666666660")));
        let child = body(
            trace,
            &[("6666666666666662", Some("6666666666666661"), &[])],
        );
        assert_eq!(post(&receiver, child).await.status, 200);
        let late = receiver.clone();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            let root = body(
                trace,
                &[("6666666666666661", Some("6666666666666660"), &[])],
            );
            post(&late, root).await.status
        });
        let started = StdInstant::now();
        let collected = turn.settle(Duration::from_millis(150), SETTLE_MAX).await;
        let took = started.elapsed();
        assert_eq!(sender.await.unwrap(), 200);
        assert!(
            took >= Duration::from_millis(700) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert_eq!(collected.spans.len(), 2);
        assert!(!collected.timed_out);
    }

    #[tokio::test]
    async fn settle_gives_up_at_settle_max_without_a_root() {
        let receiver = start(ReceiverConfig::default());
        let trace = "77777777777777777777777777777777";
        let turn = receiver.expect(key(trace, None, Some("7777777777777770")));
        let child = body(
            trace,
            &[("7777777777777772", Some("7777777777777771"), &[])],
        );
        assert_eq!(post(&receiver, child).await.status, 200);
        let started = StdInstant::now();
        let collected = turn
            .settle(Duration::from_millis(100), Duration::from_millis(700))
            .await;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(700) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert!(collected.timed_out);
        assert_eq!(collected.spans.len(), 1);
    }

    #[tokio::test]
    async fn a_whole_tree_under_the_sent_context_is_settled_at_once() {
        let receiver = start(ReceiverConfig::default());
        let trace = "abababababababababababababababab";
        let sent = "abababababab0000";
        let turn = receiver.expect(key(trace, None, Some(sent)));
        // The child first, the root last, as spans end.
        let spans = body(
            trace,
            &[
                ("abababababab0002", Some("abababababab0001"), &[]),
                ("abababababab0001", Some(sent), &[]),
            ],
        );
        assert_eq!(post(&receiver, spans).await.status, 200);
        let started = StdInstant::now();
        let collected = turn.settle(Duration::from_secs(2), SETTLE_MAX).await;
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(collected.spans.len(), 2);
    }

    #[tokio::test]
    async fn settle_waits_until_spans_stop_coming() {
        let receiver = start(ReceiverConfig::default());
        let trace = "88888888888888888888888888888888";
        let turn = receiver.expect(key(trace, None, None));
        let root = body(trace, &[("8888888888888880", None, &[])]);
        assert_eq!(post(&receiver, root).await.status, 200);
        let late = receiver.clone();
        let sender = tokio::spawn(async move {
            for i in 1..=5 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let id = format!("888888888888888{i}");
                let child = body(trace, &[(&id, Some("8888888888888880"), &[])]);
                assert_eq!(post(&late, child).await.status, 200);
            }
            StdInstant::now()
        });
        let collected = turn.settle(Duration::from_millis(300), SETTLE_MAX).await;
        let done = StdInstant::now();
        let last_sent = sender.await.unwrap();
        assert!(
            done >= last_sent + Duration::from_millis(250),
            "{:?}",
            done - last_sent
        );
        assert_eq!(collected.spans.len(), 6);
    }

    #[tokio::test]
    async fn a_turns_spans_are_capped_and_the_overflow_counted() {
        let config = ReceiverConfig {
            limits: Limits {
                spans_per_turn: 2,
                ..Limits::default()
            },
            ..ReceiverConfig::default()
        };
        let receiver = start(config);
        let trace = "99999999999999999999999999999999";
        let turn = receiver.expect(key(trace, None, None));
        let spans = body(
            trace,
            &[
                ("9999999999999991", None, &[]),
                ("9999999999999992", Some("9999999999999991"), &[]),
                ("9999999999999993", Some("9999999999999991"), &[]),
            ],
        );
        assert_eq!(post(&receiver, spans).await.status, 200);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!((collected.spans.len(), collected.dropped), (2, 1));

        let config = ReceiverConfig {
            limits: Limits {
                bytes_per_turn: 4_000,
                ..Limits::default()
            },
            ..ReceiverConfig::default()
        };
        let receiver = start(config);
        let turn = receiver.expect(key(trace, None, None));
        let big = "x".repeat(3_000);
        let spans = body(
            trace,
            &[
                ("9999999999999991", None, &[("a", &big)]),
                ("9999999999999992", None, &[("a", &big)]),
            ],
        );
        assert_eq!(post(&receiver, spans).await.status, 200);
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!((collected.spans.len(), collected.dropped), (1, 1));
    }

    #[tokio::test]
    async fn bad_requests_get_their_status_and_a_message() {
        use prost::Message;
        let config = ReceiverConfig {
            limits: Limits {
                body: BodyLimits {
                    body: 4_096,
                    decoded: 8_192,
                },
                ..Limits::default()
            },
            ..ReceiverConfig::default()
        };
        let receiver = start(config);
        let (protobuf, _) = fixture("python-protobuf");

        let answer = post_to(
            &receiver,
            "/v1/metrics",
            vec![],
            "application/x-protobuf",
            None,
        )
        .await;
        assert_eq!(answer.status, 404);
        assert!(String::from_utf8_lossy(&answer.body).contains("POST /v1/traces"));

        let client = crate::util::http::client_builder().build().unwrap();
        let get = client
            .get(format!("http://{}{TRACES_PATH}", receiver.addr()))
            .send()
            .await
            .unwrap();
        assert_eq!(get.status().as_u16(), 405);
        assert_eq!(get.headers()["allow"], "POST");

        let answer = post_to(&receiver, TRACES_PATH, protobuf.clone(), "text/plain", None).await;
        assert_eq!(answer.status, 415);
        assert!(
            String::from_utf8_lossy(&answer.body).contains("unsupported content type `text/plain`")
        );
        let answer = post_to(
            &receiver,
            TRACES_PATH,
            protobuf.clone(),
            "application/x-protobuf",
            Some("br"),
        )
        .await;
        assert_eq!(answer.status, 415);

        let answer = post_to(
            &receiver,
            TRACES_PATH,
            vec![0; 5_000],
            "application/x-protobuf",
            None,
        )
        .await;
        assert_eq!(answer.status, 413);
        assert_eq!(
            pb_message(&answer.body),
            "the request body is over the limit of 4096 bytes"
        );

        let cut = protobuf[..protobuf.len() - 7].to_vec();
        let answer = post_to(&receiver, TRACES_PATH, cut, "application/x-protobuf", None).await;
        assert_eq!(answer.status, 400);
        assert_eq!(answer.content_type, "application/x-protobuf");
        assert!(
            pb_message(&answer.body)
                .starts_with("the body is not a protobuf ExportTraceServiceRequest"),
            "{}",
            pb_message(&answer.body)
        );

        let bad = body("not-hex", &[("0000000000000001", None, &[])]);
        let answer = post(&receiver, bad).await;
        assert_eq!(answer.status, 400);
        assert_eq!(answer.content_type, "application/json");
        let message: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(
            message["message"],
            "resourceSpans[0].scopeSpans[0].spans[0].traceId: `not-hex` is not an id of 16 bytes (32 hex digits)"
        );

        // Still serving.
        assert_eq!(post_fixture(&receiver, "python-protobuf").await.status, 200);
        assert_eq!(receiver.unmatched(), 3);

        fn pb_message(body: &[u8]) -> String {
            otlp_status(body)
        }
        fn otlp_status(body: &[u8]) -> String {
            #[derive(Clone, PartialEq, prost::Message)]
            struct RpcStatus {
                #[prost(string, tag = "2")]
                message: String,
            }
            RpcStatus::decode(body).unwrap().message
        }
    }

    /// Node's exporter sends its body chunked; written here by hand to be sure of it.
    #[tokio::test]
    async fn a_chunked_body_is_read() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let receiver = start(ReceiverConfig::default());
        let turn = receiver.expect(key(NODE_TRACE, None, None));
        let (json, _) = fixture("node-json");
        let mut request = format!(
            "POST {TRACES_PATH} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        .into_bytes();
        for chunk in json.chunks(100) {
            request.extend(format!("{:x}\r\n", chunk.len()).bytes());
            request.extend(chunk);
            request.extend(b"\r\n");
        }
        request.extend(b"0\r\n\r\n");
        let mut stream = tokio::net::TcpStream::connect(receiver.addr())
            .await
            .unwrap();
        stream.write_all(&request).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("\r\n\r\n{}"), "{response}");
        let collected = turn.settle(Duration::from_millis(50), SETTLE_MAX).await;
        assert_eq!(collected.spans.len(), 2);
    }

    #[test]
    fn a_port_in_use_is_a_setup_error_naming_the_setting() {
        let first = start(ReceiverConfig::default());
        let e = Receiver::start(first.addr(), ReceiverConfig::default()).unwrap_err();
        assert!(matches!(e, TraceSetupError::Listen { addr, .. } if addr == first.addr()));
        let message = e.to_string();
        assert!(
            message.starts_with(&format!(
                "failed to listen for OpenTelemetry traces on {} (`[traces] listen`): ",
                first.addr()
            )),
            "{message}"
        );
        assert!(
            message.ends_with("another process uses that port: set `[traces] listen` to a free port, or to 127.0.0.1:0 for any free one"),
            "{message}"
        );
    }

    #[test]
    fn one_receiver_serves_the_process() {
        let (a, _) = shared("127.0.0.1:0".parse().unwrap(), ReceiverConfig::default()).unwrap();
        let (b, started) =
            shared("127.0.0.1:1".parse().unwrap(), ReceiverConfig::default()).unwrap();
        assert!(!started);
        assert_eq!(a.addr(), b.addr());
        assert!(format!("{a:?}").contains(&a.addr().to_string()));
    }

    #[tokio::test]
    async fn a_turn_dropped_unsettled_is_forgotten() {
        let receiver = start(ReceiverConfig::default());
        drop(receiver.expect(key(NODE_TRACE, Some("sess-42"), None)));
        assert_eq!(post_fixture(&receiver, "node-json").await.status, 200);
        assert_eq!(receiver.unmatched(), 2);
    }

    #[tokio::test]
    async fn the_server_stops_with_its_last_handle() {
        let receiver = start(ReceiverConfig::default());
        let addr = receiver.addr();
        drop(receiver);
        let deadline = StdInstant::now() + Duration::from_secs(5);
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            assert!(
                StdInstant::now() < deadline,
                "{addr} still accepts connections"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn each_kind_of_refusal_is_reported_once() {
        let receiver = start(ReceiverConfig::default());
        let state = &receiver.inner.state;
        assert!(state.log_once("gzip", &"first"));
        assert!(!state.log_once("gzip", &"second"));
        assert!(state.log_once("json", &"another kind"));
        assert!(format!("{state:?}").starts_with("State"));
    }

    /// Without agentest's parent id, a root is a span with no parent or with a parent
    /// not among the turn's spans.
    #[test]
    fn a_root_without_a_known_parent() {
        let span = |id: &str, parent: Option<&str>| Span {
            span_id: span_id(id),
            parent_span_id: parent.map(span_id),
            ..Span::default()
        };
        let mut bucket = Bucket {
            key: key(PYTHON_TRACE, None, None),
            notify: Arc::new(Notify::new()),
            traces: vec![],
            spans: vec![],
            bytes: 0,
            dropped: 0,
            dropped_root: false,
            last_arrival: None,
        };
        assert!(!bucket.has_root());
        bucket.spans = vec![
            span("0000000000000001", Some("0000000000000002")),
            span("0000000000000002", Some("0000000000000001")),
        ];
        assert!(!bucket.has_root());
        bucket
            .spans
            .push(span("0000000000000003", Some("00000000000000ff")));
        assert!(bucket.has_root());
        bucket.spans = vec![span("0000000000000004", None)];
        assert!(bucket.has_root());
    }
}
