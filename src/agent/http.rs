//! HTTP agents: one POST per turn with the request as the JSON body.

use std::time::Duration;

use super::{Reply, Request, DEFAULT_HTTP_TIMEOUT};

pub(crate) struct HttpSpec {
    pub(crate) url: reqwest::Url,
    client: reqwest::Client,
    headers: reqwest::header::HeaderMap,
    timeout: Option<Duration>,
}

impl HttpSpec {
    pub(crate) fn new(
        url: reqwest::Url,
        headers: Vec<(String, String)>,
        timeout: Option<Duration>,
    ) -> Result<Self, String> {
        let mut map = reqwest::header::HeaderMap::new();
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("invalid header name `{k}`"))?;
            // The value may be a secret: never echo it.
            let mut value = reqwest::header::HeaderValue::from_str(&v)
                .map_err(|_| format!("invalid value for header `{k}`"))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        // One client per agent: connections are pooled and reused across turns and cases.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .map_err(|e| format!("failed to build the HTTP client: {e}"))?;
        Ok(HttpSpec {
            url,
            client,
            headers: map,
            timeout,
        })
    }

    pub(crate) async fn send(&self, request: &Request) -> Result<Reply, String> {
        let timeout = self.timeout.unwrap_or(DEFAULT_HTTP_TIMEOUT);
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .timeout(timeout)
            .json(request)
            .send()
            .await
            .map_err(|e| describe(&self.url, e, timeout))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| describe(&self.url, e, timeout))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(format!(
                "agent at {} answered HTTP {status}: {}",
                self.url,
                crate::assertion::clip(text.trim())
            ));
        }
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
            format!(
                "agent at {} answered with a body that is not JSON ({e}): {}",
                self.url,
                crate::assertion::clip(String::from_utf8_lossy(&body).trim())
            )
        })?;
        Reply::from_json(value).map_err(|e| format!("agent reply broke the protocol: {e}"))
    }
}

fn describe(url: &reqwest::Url, e: reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!(
            "agent at {url} did not answer within {}",
            crate::duration::format_duration(timeout)
        )
    } else if e.is_connect() {
        format!("failed to connect to agent at {url}: {}", root_cause(&e))
    } else {
        format!("request to agent at {url} failed: {}", root_cause(&e))
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
