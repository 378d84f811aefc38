//! HTTP agents: one POST per turn with the request as the JSON body; the POST with
//! retries that other HTTP kinds (`langgraph`) reuse.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use tokio::time::Instant;

use super::{CaseScope, DEFAULT_HTTP_TIMEOUT};
use crate::agent::Timed;
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
}

impl HttpSpec {
    pub(crate) fn new(
        url: reqwest::Url,
        shown: String,
        headers: Vec<(String, String)>,
        timeout: Option<Duration>,
        retries: u32,
        what: &str,
    ) -> Result<Self, AgentSetupError> {
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
        })
    }

    /// One POST of `body` to `url` (`shown` in messages), its answer's body with when
    /// its first byte (the response head) came. `Err(Retry)` is an answer worth retrying
    /// (a 429, 502, 503 or 504, or a dropped connection), with the server's
    /// `Retry-After` when it gave one.
    async fn attempt(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &impl serde::Serialize,
        timeout: Duration,
    ) -> Result<Timed<Vec<u8>>, Attempt> {
        let response = self
            .client
            .post(url.clone())
            .headers(self.headers.clone())
            .timeout(timeout)
            .json(body)
            .send()
            .await
            .map_err(|e| {
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
        let first_byte = std::time::Instant::now();
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
        if let Some(length) = response.content_length() {
            if length > MAX_REPLY_BYTES as u64 {
                return Err(Attempt::Fail(AgentError::AnnouncedTooLarge {
                    shown: shown.to_string(),
                    length,
                }));
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
            .map_err(|e| Attempt::Fail(describe(shown, e, timeout)))?;
        if !complete {
            return Err(Attempt::Fail(AgentError::BodyTooLarge {
                shown: shown.to_string(),
            }));
        }
        // agentest asks for no compression (it sends no Accept-Encoding) and decodes
        // none: a compressed body is said as such, not shown as binary "not JSON".
        let encoding = encoding.or_else(|| body.starts_with(&[0x1f, 0x8b]).then(|| "gzip".into()));
        if let Some(encoding) = encoding {
            return Err(Attempt::Fail(AgentError::Compressed {
                shown: shown.to_string(),
                encoding,
            }));
        }
        Ok(Timed::at(body, first_byte))
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

/// One conversation with an HTTP agent: its spec, the case's deadline, and where its
/// retries are counted.
pub(crate) struct HttpSession {
    spec: Arc<HttpSpec>,
    deadline: Instant,
    calls: Arc<ModelCalls>,
}

impl HttpSession {
    pub(crate) fn new(spec: Arc<HttpSpec>, scope: &CaseScope) -> HttpSession {
        HttpSession {
            spec,
            deadline: scope.deadline,
            calls: scope.calls.clone(),
        }
    }

    /// Sends one turn: the request as the body, the answer as the reply.
    pub(crate) async fn send(&self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        let answer = self.post(&self.spec.url, &self.spec.shown, request).await?;
        let reply = Reply::from_json(answer.value).map_err(AgentError::Protocol)?;
        Ok(Timed {
            value: reply,
            first_byte: answer.first_byte,
        })
    }

    /// POSTs `body` to `url` (`shown` in messages) and reads the answer's JSON (see
    /// [`HttpSession::post_raw`]).
    pub(crate) async fn post(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &impl serde::Serialize,
    ) -> Result<Timed<serde_json::Value>, AgentError> {
        let answer = self.post_raw(url, shown, body).await?;
        let value = serde_json::from_slice(&answer.value).map_err(|source| AgentError::BodyNotJson {
            shown: shown.to_string(),
            source,
            body: crate::util::clip(String::from_utf8_lossy(&answer.value).trim()),
        })?;
        Ok(Timed {
            value,
            first_byte: answer.first_byte,
        })
    }

    /// POSTs `body` to `url` (`shown` in messages) and reads the answer's body,
    /// retrying a 429, 502, 503 or 504 answer or a dropped connection (honouring
    /// `Retry-After`, said on stderr, counted in the case's `retries`), never past the
    /// case's deadline. Other agent kinds that speak HTTP (`langgraph`) use it too.
    pub(crate) async fn post_raw(
        &self,
        url: &reqwest::Url,
        shown: &str,
        body: &impl serde::Serialize,
    ) -> Result<Timed<Vec<u8>>, AgentError> {
        let spec = &self.spec;
        let timeout = spec.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let mut retries = 0;
        loop {
            let (error, retry_after) = match spec.attempt(url, shown, body, timeout).await {
                Ok(value) => return Ok(value),
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
