//! HTTP agents: one POST per turn, its body and answer in the agent's `format` (see
//! [`wire`](super::wire)), the answer a JSON body or an event stream ([`sse`]).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::StatusCode;
use tokio::time::Instant;

use serde_json::Value;

use super::wire::{self, SessionWire, Wire};
use super::{sse, CaseScope, Timed};
use crate::config::HttpFormat;
use crate::errors::{AgentError, AgentSetupError};
use crate::llm::ModelCalls;
use crate::protocol::MAX_REPLY_BYTES;
use crate::protocol::{Reply, Request};

/// How much of an error response's body is read, for the message.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// Retries of an agent's 429, 502, 503 or 504 answer or dropped connection, unless its
/// config says otherwise.
pub(crate) const DEFAULT_RETRIES: u32 = 2;

/// The first wait before a retry, doubled each time, at most [`BACKOFF_CAP`].
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(30);

pub(crate) struct HttpSpec {
    pub(crate) url: reqwest::Url,
    /// The URL as the config writes it, before `${VAR}` expansion, without user info or
    /// query: what messages show (see [`shown_url`]).
    pub(crate) shown: String,
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    timeout: Option<Duration>,
    retries: u32,
    wire: Wire,
    session: Option<SessionSpec>,
}

/// The `[session]` request: where it goes, and what it sends and reads.
struct SessionSpec {
    url: reqwest::Url,
    shown: String,
    wire: SessionWire,
}

/// How long an agent's answer may take and how often a failed POST is made again: they
/// come from the same table and are read together.
pub(crate) struct Patience {
    /// How long one POST's answer may take (default: [`DEFAULT_HTTP_TIMEOUT`]).
    pub(crate) timeout: Option<Duration>,
    /// How many times a transient failure is retried.
    pub(crate) retries: u32,
}

/// One POST: what it sends, how long it waits, and whether `timeout` bounds the whole
/// exchange or, for a stream, only the wait for its head.
struct Post<'a> {
    body: &'a Value,
    timeout: Duration,
    whole: bool,
    /// The turn's W3C `traceparent`, when its spans are read.
    trace: Option<&'a HeaderValue>,
}

impl HttpSpec {
    pub(crate) fn new(
        url: reqwest::Url,
        shown: String,
        headers: Vec<(String, String)>,
        patience: Patience,
        wire: Wire,
        what: &str,
    ) -> Result<Self, AgentSetupError> {
        let Patience { timeout, retries } = patience;
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
                AgentSetupError::HeaderName {
                    table: what.to_string(),
                    name: k.clone(),
                }
            })?;
            // The value may be a secret: never echo it.
            let mut value = reqwest::header::HeaderValue::from_str(&v).map_err(|_| {
                AgentSetupError::HeaderValue {
                    table: what.to_string(),
                    name: k.clone(),
                }
            })?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        // One client per agent: connections are pooled and reused across turns and cases.
        let client = crate::util::http::client_builder()
            .pool_max_idle_per_host(64)
            .build()
            .map_err(AgentSetupError::Client)?;
        Ok(HttpSpec {
            url,
            shown,
            client,
            headers: map,
            timeout,
            retries,
            session: wire
                .session
                .clone()
                .map(|w| SessionSpec::new(w, what))
                .transpose()?,
            wire,
        })
    }

    /// One POST to `url`, up to its answer's head. `Err(Retry)` is an answer worth
    /// retrying (a 429, 502, 503 or 504, or a dropped connection), with the server's
    /// `Retry-After` when it gave one.
    async fn open(
        &self,
        url: &reqwest::Url,
        shown: &str,
        post: Post<'_>,
    ) -> Result<reqwest::Response, Attempt> {
        let Post {
            body,
            timeout,
            whole,
            trace,
        } = post;
        let mut post = self
            .client
            .post(url.clone())
            .headers(self.headers.clone())
            .json(body);
        if let Some(tp) = trace {
            post = post.header("traceparent", tp.clone());
        }
        if whole {
            post = post.timeout(timeout);
        }
        let sent = tokio::time::timeout(timeout, post.send())
            .await
            .map_err(|_| {
                Attempt::Fail(AgentError::HttpTimeout {
                    shown: shown.to_string(),
                    timeout,
                })
            })?;
        let response = sent.map_err(|e| {
            let dropped = e.is_request() && !e.is_timeout() && !e.is_connect();
            let error = describe(shown, e, timeout);
            if dropped {
                Attempt::Retry {
                    error,
                    retry_after: None,
                }
            } else {
                Attempt::Fail(error)
            }
        })?;
        let status = response.status();
        let retry_after = crate::util::http::retry_after(response.headers());
        if !status.is_success() {
            let (body, _) = read_capped(response, ERROR_BODY_BYTES)
                .await
                .map_err(|e| Attempt::Fail(describe(shown, e, timeout)))?;
            let text = String::from_utf8_lossy(&body);
            let error = AgentError::Status {
                shown: shown.to_string(),
                status,
                body: crate::util::clip(text.trim()),
            };
            let transient = matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS
                    | StatusCode::BAD_GATEWAY
                    | StatusCode::SERVICE_UNAVAILABLE
                    | StatusCode::GATEWAY_TIMEOUT
            );
            return Err(if transient {
                Attempt::Retry { error, retry_after }
            } else {
                Attempt::Fail(error)
            });
        }
        Ok(response)
    }

    /// The URL of `path` under this agent's base URL, and how messages show it: for the
    /// kinds that speak an API of their own (`langgraph`, `eliza`).
    pub(crate) fn at(&self, path: &[&str]) -> (reqwest::Url, String) {
        let mut url = self.url.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(path);
        }
        let shown = format!("{}/{}", self.shown.trim_end_matches('/'), path.join("/"));
        (url, shown)
    }

    /// One GET of a JSON document (an A2A agent card), with this agent's headers; a
    /// non-2xx status or a body that is not JSON is an error naming `shown`.
    pub(crate) async fn get_json(
        &self,
        url: &reqwest::Url,
        shown: &str,
    ) -> Result<Value, AgentError> {
        let timeout = self.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let response = self
            .client
            .get(url.clone())
            .headers(self.headers.clone())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| describe(shown, e, timeout))?;
        let status = response.status();
        let body = read_body(response, shown, timeout).await?;
        if !status.is_success() {
            return Err(AgentError::Status {
                shown: shown.to_string(),
                status,
                body: crate::util::clip(String::from_utf8_lossy(&body).trim()),
            });
        }
        parse_json(&body, shown)
    }

    /// One POST whose answer is a JSON body; its first byte is the answer's head.
    async fn post_json(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &Value,
        timeout: Duration,
        trace: Option<&HeaderValue>,
    ) -> Result<Timed<Value>, Attempt> {
        let answer = self.post_bytes(url, shown, body, timeout, trace).await?;
        let value = parse_json(&answer.value, shown).map_err(Attempt::Fail)?;
        Ok(Timed {
            value,
            first_byte: answer.first_byte,
        })
    }

    /// One POST whose answer is read whole, as bytes; its first byte is the answer's head.
    async fn post_bytes(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &Value,
        timeout: Duration,
        trace: Option<&HeaderValue>,
    ) -> Result<Timed<Vec<u8>>, Attempt> {
        let post = Post {
            body,
            timeout,
            whole: true,
            trace,
        };
        let response = self.open(url, shown, post).await?;
        let head = std::time::Instant::now();
        let bytes = read_body(response, shown, timeout)
            .await
            .map_err(Attempt::Fail)?;
        Ok(Timed::at(bytes, head))
    }

    /// One turn: the POST and its answer, as a JSON body or an event stream.
    async fn exchange(
        &self,
        request: &Request,
        session: Option<&str>,
        timeout: Duration,
        trace: Option<&HeaderValue>,
    ) -> Result<Timed<Reply>, Attempt> {
        let body = self.wire.request_body(request, session);
        let response = self
            .open(
                &self.url,
                &self.shown,
                Post {
                    body: &body,
                    timeout,
                    whole: !self.wire.sse,
                    trace,
                },
            )
            .await?;
        if self.wire.sse {
            return self
                .read_stream(response, timeout)
                .await
                .map_err(Attempt::Fail);
        }
        // A whole answer's first byte is its response head.
        let head = std::time::Instant::now();
        let bytes = read_body(response, &self.shown, timeout)
            .await
            .map_err(Attempt::Fail)?;
        let doc = parse_json(&bytes, &self.shown).map_err(Attempt::Fail)?;
        let reply = self.wire.reply(doc, &self.shown).map_err(Attempt::Fail)?;
        Ok(Timed::at(reply, head))
    }

    /// Reads an event stream event by event: an `openai-chat` one up to `data: [DONE]`,
    /// a `custom` one to the end of the body, each read waiting at most `idle`. The
    /// reply's first byte is its first event (its first token).
    async fn read_stream(
        &self,
        response: reqwest::Response,
        idle: Duration,
    ) -> Result<Timed<Reply>, AgentError> {
        let shown = &self.shown;
        let mut stream = Streamed::new(&self.wire);
        let read = read_events(response, shown, idle, |event| {
            Ok(if stream.add(event, shown)? {
                Flow::Done
            } else {
                Flow::Token
            })
        })
        .await?;
        // `[DONE]` finishes the answer; the body's end finishes a custom one.
        let reply = if read.value {
            stream.finish(shown)
        } else {
            stream.end(shown)
        };
        reply.map(|value| Timed {
            value,
            first_byte: read.first_byte,
        })
    }
}

/// What a stream's reader made of one event.
pub(crate) enum Flow {
    /// Read on; the event carried none of the reply (a stream's metadata, the echo of
    /// the user's message).
    More,
    /// Read on; the event carried part of the reply: the first such is the first token.
    Token,
    /// The event ends the answer: stop reading.
    Done,
}

/// Reads a `text/event-stream` answer event by event, giving each to `take`, each read
/// waiting at most `idle`, at most [`MAX_REPLY_BYTES`] in all. Its value is whether an
/// event ended the answer (`false`: the body ended); its first byte is the first event
/// `take` called a token (none: the response head stands for it).
async fn read_events(
    mut response: reqwest::Response,
    shown: &str,
    idle: Duration,
    mut take: impl FnMut(sse::Event) -> Result<Flow, AgentError>,
) -> Result<Timed<bool>, AgentError> {
    let head = std::time::Instant::now();
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !kind.trim_start().starts_with("text/event-stream") {
        let (body, _) = read_capped(response, ERROR_BODY_BYTES)
            .await
            .map_err(|e| describe(shown, e, idle))?;
        return Err(AgentError::NotEventStream {
            shown: shown.to_string(),
            content_type: kind,
            body: crate::util::clip(String::from_utf8_lossy(&body).trim()),
        });
    }
    let mut parser = sse::Parser::default();
    let mut read = 0usize;
    let mut first = None;
    loop {
        let chunk = tokio::time::timeout(idle, response.chunk())
            .await
            .map_err(|_| AgentError::StreamIdle {
                shown: shown.to_string(),
                timeout: idle,
            })?
            .map_err(|e| describe(shown, e, idle))?;
        let events = match &chunk {
            Some(bytes) => {
                read += bytes.len();
                if read > MAX_REPLY_BYTES {
                    return Err(AgentError::BodyTooLarge {
                        shown: shown.to_string(),
                    });
                }
                parser.push(bytes)
            }
            None => parser.finish().into_iter().collect(),
        };
        for event in events {
            let now = std::time::Instant::now();
            match take(event)? {
                Flow::More => {}
                Flow::Token => {
                    first.get_or_insert(now);
                }
                Flow::Done => {
                    return Ok(Timed {
                        value: true,
                        first_byte: Some(first.unwrap_or(head)),
                    })
                }
            }
        }
        if chunk.is_none() {
            return Ok(Timed {
                value: false,
                first_byte: Some(first.unwrap_or(head)),
            });
        }
    }
}

/// An event stream being read, by format.
enum Streamed<'a> {
    Chat(sse::ChatStream),
    Custom {
        paths: &'a wire::ReplyPaths,
        gathered: wire::Gathered,
        /// The events' data, for an error's message (clipped there).
        seen: String,
    },
}

impl<'a> Streamed<'a> {
    fn new(wire: &'a Wire) -> Streamed<'a> {
        match wire.format {
            HttpFormat::Custom => Streamed::Custom {
                paths: wire.paths(),
                gathered: wire::Gathered::default(),
                seen: String::new(),
            },
            _ => Streamed::Chat(sse::ChatStream::default()),
        }
    }

    /// Takes one event; `true` when it ends the answer (`data: [DONE]`).
    fn add(&mut self, event: sse::Event, shown: &str) -> Result<bool, AgentError> {
        let data = event.data.trim();
        if matches!(self, Streamed::Chat(_)) && data == "[DONE]" {
            return Ok(true);
        }
        let doc: Value = serde_json::from_str(data).map_err(|source| AgentError::EventNotJson {
            shown: shown.to_string(),
            source,
            data: crate::util::clip(data),
        })?;
        match self {
            Streamed::Chat(chat) => {
                if doc.get("error").is_some() {
                    return Err(AgentError::ReplyShape {
                        shown: shown.to_string(),
                        expected: "chat.completion.chunk events, not an error",
                        body: crate::util::clip(data),
                    });
                }
                chat.add(&doc);
            }
            Streamed::Custom {
                paths,
                gathered,
                seen,
            } => {
                gathered.add(paths, &doc);
                if seen.len() < ERROR_BODY_BYTES {
                    seen.push_str(data);
                    seen.push('\n');
                }
            }
        }
        Ok(false)
    }

    /// The body ended: a custom stream's end, an `openai-chat` one cut short.
    fn end(self, shown: &str) -> Result<Reply, AgentError> {
        match self {
            Streamed::Chat(_) => Err(AgentError::StreamUnfinished {
                shown: shown.to_string(),
            }),
            custom => custom.finish(shown),
        }
    }

    fn finish(self, shown: &str) -> Result<Reply, AgentError> {
        match self {
            Streamed::Chat(chat) => chat.finish().ok_or_else(|| AgentError::ReplyShape {
                shown: shown.to_string(),
                expected: "chat.completion.chunk events (with `choices`)",
                body: String::from("(no event had `choices`)"),
            }),
            Streamed::Custom {
                paths,
                gathered,
                seen,
            } => gathered.finish(paths, shown, true, &|| seen.clone()),
        }
    }
}

/// Reads a successful answer's body whole (at most [`MAX_REPLY_BYTES`], not compressed).
async fn read_body(
    response: reqwest::Response,
    shown: &str,
    timeout: Duration,
) -> Result<Vec<u8>, AgentError> {
    if let Some(length) = response.content_length() {
        if length > MAX_REPLY_BYTES as u64 {
            return Err(AgentError::AnnouncedTooLarge {
                shown: shown.to_string(),
                length,
            });
        }
    }
    let encoding = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty() && v != "identity");
    let (body, complete) = read_capped(response, MAX_REPLY_BYTES)
        .await
        .map_err(|e| describe(shown, e, timeout))?;
    if !complete {
        return Err(AgentError::BodyTooLarge {
            shown: shown.to_string(),
        });
    }
    // agentest asks for no compression (it sends no Accept-Encoding) and decodes
    // none: a compressed body is said as such, not shown as binary "not JSON".
    let encoding = encoding.or_else(|| body.starts_with(&[0x1f, 0x8b]).then(|| "gzip".into()));
    if let Some(encoding) = encoding {
        return Err(AgentError::Compressed {
            shown: shown.to_string(),
            encoding,
        });
    }
    Ok(body)
}

/// An answer's body as JSON.
fn parse_json(body: &[u8], shown: &str) -> Result<Value, AgentError> {
    serde_json::from_slice(body).map_err(|source| AgentError::BodyNotJson {
        shown: shown.to_string(),
        source,
        body: crate::util::clip(String::from_utf8_lossy(body).trim()),
    })
}

impl SessionSpec {
    fn new(wire: SessionWire, what: &str) -> Result<SessionSpec, AgentSetupError> {
        let key = format!("{what}.session.url");
        let shown = crate::util::shown_url(&wire.url);
        let url = crate::util::expand_secret(&wire.url, &key)?;
        let url = reqwest::Url::parse(&url).map_err(|source| AgentSetupError::Url {
            key,
            shown: shown.clone(),
            source,
        })?;
        Ok(SessionSpec { url, shown, wire })
    }
}

/// How one POST went, when it gave no reply.
enum Attempt {
    /// Worth another try.
    Retry {
        error: AgentError,
        retry_after: Option<Duration>,
    },
    /// Final.
    Fail(AgentError),
}

/// One conversation with an HTTP agent: its spec, the case's deadline, where its
/// retries are counted, and the id its `[session]` request got.
pub(crate) struct HttpSession {
    spec: Arc<HttpSpec>,
    deadline: Instant,
    calls: Arc<ModelCalls>,
    session: Option<String>,
    /// The current turn's W3C `traceparent`, sent on each of its requests.
    traceparent: Option<HeaderValue>,
}

impl HttpSession {
    pub(crate) fn new(spec: Arc<HttpSpec>, scope: &CaseScope) -> HttpSession {
        HttpSession {
            spec,
            deadline: scope.deadline,
            calls: scope.calls.clone(),
            session: None,
            traceparent: None,
        }
    }

    /// The conversation's id its `[session]` request got, once made.
    pub(crate) fn conversation_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Sends `traceparent` (a W3C trace context) on every request of the turn to come;
    /// `None` sends none.
    pub(crate) fn set_traceparent(&mut self, traceparent: Option<&str>) {
        self.traceparent = traceparent.and_then(|t| HeaderValue::from_str(t).ok());
    }

    /// Sends one turn (after the `[session]` request, before the first), retrying a
    /// 429, 502, 503 or 504 answer or a dropped connection (honouring `Retry-After`,
    /// said on stderr, counted in the case's `retries`), never past the case's deadline.
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        let spec = self.spec.clone();
        let timeout = spec.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        if let (Some(session), None) = (&spec.session, &self.session) {
            let body = session.wire.body.render(request, None);
            let doc = self
                .retrying(|| {
                    spec.post_json(
                        &session.url,
                        &session.shown,
                        &body,
                        timeout,
                        self.traceparent.as_ref(),
                    )
                })
                .await?;
            self.session = Some(session.wire.id(&doc.value, &session.shown)?);
        }
        let id = self.session.as_deref();
        let trace = self.traceparent.as_ref();
        self.retrying(|| spec.exchange(request, id, timeout, trace))
            .await
    }

    /// POSTs `body` to `url` (`shown` in messages) and reads the answer's JSON, with the
    /// agent's headers, timeout and retries: for the agent kinds that speak an HTTP API
    /// of their own (`langgraph`).
    pub(crate) async fn post(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &Value,
    ) -> Result<Timed<Value>, AgentError> {
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let trace = self.traceparent.as_ref();
        self.retrying(|| self.spec.post_json(url, shown, body, timeout, trace))
            .await
    }

    /// POSTs `body` to `url` (`shown` in messages) and reads its `text/event-stream`
    /// answer event by event as [`read_events`] does, each read waiting at most the
    /// agent's timeout: for the kinds of their own API that stream (`langgraph`, `a2a`,
    /// `eliza`). Only the request is retried, never a stream once it has begun.
    pub(crate) async fn post_events(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &Value,
        take: impl FnMut(sse::Event) -> Result<Flow, AgentError>,
    ) -> Result<Timed<bool>, AgentError> {
        let timeout = self.spec.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let response = self
            .retrying(|| {
                let post = Post {
                    body,
                    timeout,
                    whole: false,
                    trace: self.traceparent.as_ref(),
                };
                self.spec.open(url, shown, post)
            })
            .await?;
        read_events(response, shown, timeout, take).await
    }

    /// Makes `attempt` until it succeeds, fails for good, or runs out of retries.
    async fn retrying<T, F: std::future::Future<Output = Result<T, Attempt>>>(
        &self,
        mut attempt: impl FnMut() -> F,
    ) -> Result<T, AgentError> {
        let spec = &self.spec;
        let mut retries = 0;
        loop {
            let (error, retry_after) = match attempt().await {
                Ok(done) => return Ok(done),
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry { error, retry_after }) => (error, retry_after),
            };
            if retries >= spec.retries {
                return Err(error);
            }
            let delay = retry_after.unwrap_or_else(|| {
                BACKOFF_BASE
                    .saturating_mul(1 << retries.min(10))
                    .min(BACKOFF_CAP)
            });
            let now = Instant::now();
            if now + delay >= self.deadline {
                return Err(match retry_after {
                    Some(asked) => AgentError::RetryPastDeadline {
                        error: Box::new(error),
                        asked: crate::util::format_duration(asked),
                        left: crate::util::format_duration(
                            self.deadline.saturating_duration_since(now),
                        ),
                    },
                    None => error,
                });
            }
            retries += 1;
            self.calls.count_retry();
            eprintln!(
                "agentest: {}; retry {retries}/{} in {}",
                crate::util::scrub(&error.to_string()),
                spec.retries,
                crate::util::format_duration(delay)
            );
            tokio::time::sleep(delay).await;
        }
    }
}

/// Reads at most `cap` bytes of the body, chunk by chunk; `false` when there was more.
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > cap {
            let room = cap - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// A failed request, without the URL reqwest would print (it is the expanded one).
fn describe(shown: &str, e: reqwest::Error, timeout: Duration) -> AgentError {
    let source = e.without_url();
    let shown = shown.to_string();
    if source.is_timeout() {
        AgentError::HttpTimeout { shown, timeout }
    } else if source.is_connect() {
        AgentError::Connect { shown, source }
    } else {
        AgentError::Request { shown, source }
    }
}
/// The HTTP side of an `http` or `langgraph` agent: its URL and headers with `${VAR}`s
/// expanded (kept out of messages), its timeout and retries.
pub(crate) fn http_spec(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    timeout: Option<Duration>,
    retries: Option<u32>,
    wire: super::wire::Wire,
    what: &str,
) -> Result<HttpSpec, AgentSetupError> {
    let shown = crate::util::shown_url(url);
    let url = crate::util::expand_secret(url, &format!("{what}.url"))?;
    let url = reqwest::Url::parse(&url).map_err(|source| AgentSetupError::Url {
        key: format!("{what}.url"),
        shown: shown.clone(),
        source,
    })?;
    let headers = expanded_headers(headers, what)?;
    HttpSpec::new(
        url,
        shown,
        headers,
        Patience {
            timeout,
            retries: retries.unwrap_or(DEFAULT_RETRIES),
        },
        wire,
        what,
    )
}

/// An agent's `headers` with their `${VAR}`s expanded (the values may be secrets).
pub(crate) fn expanded_headers(
    headers: &std::collections::BTreeMap<String, String>,
    what: &str,
) -> Result<Vec<(String, String)>, AgentSetupError> {
    headers
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                crate::util::expand_secret(v, &format!("{what}.headers.{k}"))?,
            ))
        })
        .collect()
}

/// The default per-request timeout of HTTP agents when neither the agent nor the case sets one.
pub(crate) const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(300);
