//! HTTP agents: one POST per turn with the request as the JSON body.

use std::time::Duration;

use super::DEFAULT_HTTP_TIMEOUT;
use crate::errors::{AgentError, AgentSetupError};
use crate::protocol::MAX_REPLY_BYTES;
use crate::protocol::{Reply, Request};

/// How much of an error response's body is read, for the message.
const ERROR_BODY_BYTES: usize = 64 * 1024;

pub(crate) struct HttpSpec {
    pub(crate) url: reqwest::Url,
    /// The URL as the config writes it, before `${VAR}` expansion, without user info or
    /// query: what messages show (see [`shown_url`]).
    pub(crate) shown: String,
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    timeout: Option<Duration>,
}

impl HttpSpec {
    pub(crate) fn new(
        url: reqwest::Url,
        shown: String,
        headers: Vec<(String, String)>,
        timeout: Option<Duration>,
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
        })
    }

    pub(crate) async fn send(&self, request: &Request) -> Result<Reply, AgentError> {
        let timeout = self.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let shown = &self.shown;
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .timeout(timeout)
            .json(request)
            .send()
            .await
            .map_err(|e| describe(shown, e, timeout))?;
        let status = response.status();
        if !status.is_success() {
            let (body, _) = read_capped(response, ERROR_BODY_BYTES)
                .await
                .map_err(|e| describe(shown, e, timeout))?;
            let text = String::from_utf8_lossy(&body);
            return Err(AgentError::Status {
                shown: shown.clone(),
                status,
                body: crate::util::clip(text.trim()),
            });
        }
        if let Some(length) = response.content_length() {
            if length > MAX_REPLY_BYTES as u64 {
                return Err(AgentError::AnnouncedTooLarge {
                    shown: shown.clone(),
                    length,
                });
            }
        }
        let (body, complete) = read_capped(response, MAX_REPLY_BYTES)
            .await
            .map_err(|e| describe(shown, e, timeout))?;
        if !complete {
            return Err(AgentError::BodyTooLarge {
                shown: shown.clone(),
            });
        }
        let value: serde_json::Value =
            serde_json::from_slice(&body).map_err(|source| AgentError::BodyNotJson {
                shown: shown.clone(),
                source,
                body: crate::util::clip(String::from_utf8_lossy(&body).trim()),
            })?;
        Reply::from_json(value).map_err(AgentError::Protocol)
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
