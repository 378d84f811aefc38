//! HTTP agents: one POST per turn with the request as the JSON body.

use std::time::Duration;

use super::{reply_too_large, DEFAULT_HTTP_TIMEOUT, MAX_REPLY_BYTES};
use crate::errors::AgentSetupError;
use crate::protocol::{Reply, Request};
use crate::util::root_cause;

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

    pub(crate) async fn send(&self, request: &Request) -> Result<Reply, String> {
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
            return Err(format!(
                "agent at {shown} answered HTTP {status}: {}",
                crate::util::clip(text.trim())
            ));
        }
        if let Some(len) = response.content_length() {
            if len > MAX_REPLY_BYTES as u64 {
                return Err(format!(
                    "{} (agent at {shown} announced a body of {len} bytes)",
                    reply_too_large()
                ));
            }
        }
        let (body, complete) = read_capped(response, MAX_REPLY_BYTES)
            .await
            .map_err(|e| describe(shown, e, timeout))?;
        if !complete {
            return Err(format!(
                "{} (the response body of agent at {shown})",
                reply_too_large()
            ));
        }
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            format!(
                "agent at {shown} answered with a body that is not JSON ({e}): {}",
                crate::util::clip(String::from_utf8_lossy(&body).trim())
            )
        })?;
        Reply::from_json(value).map_err(|e| format!("agent reply broke the protocol: {e}"))
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
fn describe(shown: &str, e: reqwest::Error, timeout: Duration) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        format!(
            "agent at {shown} did not answer within {}",
            crate::util::format_duration(timeout)
        )
    } else if e.is_connect() {
        format!("failed to connect to agent at {shown}: {}", root_cause(&e))
    } else {
        format!("request to agent at {shown} failed: {}", root_cause(&e))
    }
}
