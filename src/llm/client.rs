//! The chat-completions client: one [`Endpoint`] per configured model, with retries,
//! backoff, `Retry-After`, per-process limits, and errors that name the cause.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::Value;
use tokio::time::Instant;

use super::limiter::{Limiter, Load, SlotWait};
use super::{ChatRequest, SeededRng};
use crate::case::{Provider, SourceLlms};
use crate::config::{LlmConfig, StructuredOutput};
use crate::errors::{AgentSetupError, LlmError};
use crate::protocol::{Role, TokenUsage};
use crate::util::expand_secret;
use crate::util::format_duration;
use crate::util::root_cause;

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_RETRIES: u32 = 4;
const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// Model replies larger than this are refused rather than buffered.
const MAX_BODY_BYTES: usize = 32 << 20;

/// What one model call produced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatOutcome {
    /// The response body, without volatile fields (`id`, `created`, `system_fingerprint`).
    pub response: Value,
    /// Retries this call needed.
    pub retries: u32,
}

impl ChatOutcome {
    /// The first choice's message (`{role, content, tool_calls?}`).
    pub(crate) fn message(&self) -> &Value {
        &self.response["choices"][0]["message"]
    }

    /// Whether the answer was cut off at the token limit (`finish_reason: "length"`):
    /// such an answer is incomplete, whatever it looks like.
    pub(crate) fn truncated(&self) -> bool {
        self.response["choices"][0]["finish_reason"] == "length"
    }

    /// The token usage the endpoint reported.
    pub(crate) fn usage(&self) -> TokenUsage {
        let usage = &self.response["usage"];
        let mut u: TokenUsage = serde_json::from_value(usage.clone()).unwrap_or_default();
        if let Some(cached) = usage["prompt_tokens_details"]["cached_tokens"].as_u64() {
            u.cached_tokens = cached;
        }
        u
    }
}

/// One OpenAI-compatible endpoint, ready to call.
#[derive(Debug)]
pub(crate) struct Endpoint {
    what: String,
    url: reqwest::Url,
    shown: String,
    model: String,
    api_key_env: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    seed: Option<u64>,
    top_p: Option<f64>,
    stop: Option<Vec<String>>,
    tool_choice: Option<Value>,
    structured_output: StructuredOutput,
    timeout: Duration,
    headers: HeaderMap,
    max_retries: u32,
    limiter: Arc<Limiter>,
    /// What its tokens cost, when the config says.
    pricing: Option<crate::config::Pricing>,
    client: reqwest::Client,
}

/// A provider's API as EvalStudio calls it (Anthropic's through its OpenAI-compatible
/// one, `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` over the default as the providers'
/// SDKs honour them), its default model and the variable that holds its key.
fn provider_api(provider: Provider) -> (String, &'static str, &'static str) {
    let settings = crate::settings::get();
    match provider {
        Provider::OpenAi => (
            settings
                .openai_base_url
                .clone()
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            "gpt-4o-mini",
            "OPENAI_API_KEY",
        ),
        Provider::Anthropic => (
            format!(
                "{}/v1",
                settings
                    .anthropic_base_url
                    .as_deref()
                    .unwrap_or("https://api.anthropic.com")
                    .trim_end_matches('/')
            ),
            "claude-3-5-haiku-20241022",
            "ANTHROPIC_API_KEY",
        ),
    }
}

impl Endpoint {
    /// Builds an endpoint from `[llm]` (`name` None) or `[llms.NAME]`, applying the
    /// environment overrides for the base URL and the model.
    pub(crate) fn from_config(
        cfg: &LlmConfig,
        name: Option<&str>,
    ) -> Result<Endpoint, AgentSetupError> {
        let what = match name {
            None => "[llm]".to_string(),
            Some(n) => format!("[llms.\"{n}\"]"),
        };
        let settings = crate::settings::get();
        let env = |key: &str| settings.llm_override(name, key).map(str::to_string);
        Endpoint::build(cfg, what, &env)
    }

    /// Builds the endpoint of `role` (the simulator, else the judge) that another tool's
    /// file describes (EvalStudio's `llmSettings`, its label naming it in messages): the
    /// provider's API (or what `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` say, as the
    /// providers' SDKs honour them), the model named there or the provider's default,
    /// and the API key written there, if any, sent as a sensitive bearer token, else the
    /// provider's variable. `AGENTEST_LLM_*` do not apply: they override `[llm]`.
    pub(crate) fn from_source(
        source: &SourceLlms,
        role: Role,
    ) -> Result<Endpoint, AgentSetupError> {
        let (base_url, default_model, key_var) = provider_api(source.provider);
        let model = if role == Role::Simulator {
            &source.simulator
        } else {
            &source.judge
        };
        let cfg = LlmConfig {
            base_url: Some(base_url),
            model: Some(model.clone().unwrap_or_else(|| default_model.to_string())),
            api_key_env: source.api_key.is_none().then(|| key_var.to_string()),
            ..LlmConfig::default()
        };
        let what = &source.label;
        let mut endpoint = Endpoint::build(&cfg, what.to_string(), &|_| None)?;
        if let Some(key) = &source.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    AgentSetupError::HeaderValue {
                        table: what.to_string(),
                        name: "apiKey".into(),
                    }
                })?;
            value.set_sensitive(true);
            endpoint.headers.insert(AUTHORIZATION, value);
        }
        Ok(endpoint)
    }

    fn build(
        cfg: &LlmConfig,
        what: String,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Endpoint, AgentSetupError> {
        let base = env("BASE_URL")
            .or_else(|| cfg.base_url.clone())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        // Messages show the URL as written, credentials and query masked.
        let shown = crate::util::shown_url(&base);
        let base = expand_secret(&base, &format!("{what}.base_url"))?;
        let url = reqwest::Url::parse(&format!("{}/chat/completions", base.trim_end_matches('/')))
            .map_err(|source| AgentSetupError::Url {
                key: format!("{what}.base_url"),
                shown: shown.clone(),
                source,
            })?;
        let model =
            env("MODEL")
                .or_else(|| cfg.model.clone())
                .ok_or_else(|| AgentSetupError::NoModel {
                    table: what.clone(),
                })?;
        let timeout = match &cfg.timeout {
            Some(t) => {
                crate::util::parse_timeout(t).map_err(|source| AgentSetupError::Duration {
                    key: format!("{what}.timeout"),
                    source,
                })?
            }
            None => DEFAULT_TIMEOUT,
        };
        let mut headers = HeaderMap::new();
        for (k, v) in &cfg.headers {
            let value = expand_secret(v, &format!("{what}.headers.{k}"))?;
            let name =
                HeaderName::from_bytes(k.as_bytes()).map_err(|_| AgentSetupError::HeaderName {
                    table: what.clone(),
                    name: k.clone(),
                })?;
            let mut value =
                HeaderValue::from_str(&value).map_err(|_| AgentSetupError::HeaderValue {
                    table: what.clone(),
                    name: k.clone(),
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = crate::util::http::client_builder()
            .pool_max_idle_per_host(64)
            .build()
            .map_err(AgentSetupError::Client)?;
        Ok(Endpoint {
            limiter: Limiter::for_endpoint(
                url.as_str(),
                &shown,
                cfg.max_in_flight,
                cfg.requests_per_minute,
            ),
            what,
            url,
            shown,
            model,
            api_key_env: cfg.api_key_env.clone(),
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            seed: cfg.seed,
            top_p: cfg.top_p,
            stop: cfg.stop.clone(),
            tool_choice: cfg.tool_choice.clone(),
            structured_output: cfg.structured_output.unwrap_or_default(),
            timeout,
            headers,
            max_retries: cfg.max_retries.unwrap_or(DEFAULT_RETRIES),
            pricing: cfg.pricing.clone(),
            client,
        })
    }

    /// The endpoint as messages name it: `[llm]`, `[llms."judge"]`.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// What the endpoint's tokens cost, when the config says.
    pub(crate) fn pricing(&self) -> Option<&crate::config::Pricing> {
        self.pricing.as_ref()
    }

    /// The model name.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// The temperature it sends, when it sets one.
    pub(crate) fn temperature(&self) -> Option<f64> {
        self.temperature
    }

    /// The endpoint's URL for messages, without credentials or query.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// A request to this endpoint's model with its sampling settings.
    pub(crate) fn request(&self, messages: Vec<Value>, tools: Vec<Value>) -> ChatRequest {
        ChatRequest {
            model: self.model.clone(),
            // The spec's default, said out loud: servers differ when it is left out.
            tool_choice: (!tools.is_empty()).then(|| {
                self.tool_choice
                    .clone()
                    .unwrap_or_else(|| Value::from("auto"))
            }),
            messages,
            tools,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            response_format: None,
            seed: self.seed,
            top_p: self.top_p,
            stop: self.stop.clone(),
        }
    }

    /// The endpoint's `structured_output`, as configured (`auto` unless set).
    pub(crate) fn structured_output(&self) -> StructuredOutput {
        self.structured_output
    }

    /// The `response_format` that asks for a JSON answer following `schema` (named
    /// `name`) in `form`; `None` for `off` (and for `auto`, which is not a form: see
    /// `llm::structured`).
    pub(crate) fn response_format(
        form: StructuredOutput,
        name: &str,
        schema: &Value,
    ) -> Option<Value> {
        match form {
            StructuredOutput::JsonSchema => Some(serde_json::json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema},
            })),
            StructuredOutput::JsonObject => Some(serde_json::json!({"type": "json_object"})),
            StructuredOutput::JsonObjectSchema => {
                Some(serde_json::json!({"type": "json_object", "schema": schema}))
            }
            StructuredOutput::Off | StructuredOutput::Auto => None,
        }
    }

    /// A refusal that names the `response_format` this endpoint was sent says which
    /// setting to change.
    fn with_hint(&self, request: &ChatRequest, refusal: String) -> String {
        if request.response_format.is_some() && refusal.contains("response_format") {
            format!(
                "{refusal}; this endpoint does not take the `response_format` agentest sent: set `structured_output` in {} (\"auto\" to find the form it takes, \"off\" to send none)",
                self.what
            )
        } else {
            refusal
        }
    }

    /// Why this endpoint cannot be called right now (its API key variable is unset).
    pub(crate) fn unavailable(&self) -> Option<String> {
        let var = self.api_key_env.as_ref()?;
        match std::env::var(var) {
            Ok(v) if !v.is_empty() => None,
            _ => Some(format!(
                "{} needs the API key in `{var}`, which is not set",
                self.what
            )),
        }
    }

    /// Calls the model, retrying 429, 5xx, timeouts and dropped connections with
    /// exponential backoff and jitter (honouring `Retry-After`), never past `deadline`.
    /// Every retry is announced on stderr, and `on_retry` is called before it, so that
    /// retries of a call that finally fails are counted too.
    /// Time spent waiting for a slot in flight goes into `wait`.
    pub(crate) async fn call_counting(
        &self,
        request: &ChatRequest,
        deadline: Instant,
        on_retry: &(dyn Fn() + Sync),
        wait: &SlotWait,
    ) -> Result<ChatOutcome, LlmError> {
        if let Some(why) = self.unavailable() {
            return Err(LlmError::Unavailable(why));
        }
        let headers = self.headers_with_key()?;
        let tries = self.max_retries + 1;
        let mut retries = 0;
        let mut last_server_error: Option<String> = None;
        loop {
            let attempt = self
                .attempt_in_slot(request, &headers, deadline, wait)
                .await;
            let (reason, retry_after, server_error) = match attempt {
                Ok(response) => return Ok(ChatOutcome { response, retries }),
                Err(Attempt::Fatal(e)) => return Err(LlmError::Failed(e)),
                Err(Attempt::Refused(e)) => {
                    return Err(LlmError::Refused(self.with_hint(request, e)))
                }
                Err(Attempt::Retry {
                    reason,
                    retry_after,
                    server_error,
                    ..
                }) => (reason, retry_after, server_error),
            };
            let repeated = server_error && last_server_error.as_deref() == Some(reason.as_str());
            last_server_error = server_error.then(|| reason.clone());
            // A 500 that is about the `response_format` sent (llama-cpp-python's answer
            // to `json_schema`) is a refusal of the form, not an outage.
            if server_error
                && request.response_format.is_some()
                && reason.contains("response_format")
                && (retries + 1 >= tries || repeated)
            {
                return Err(LlmError::Refused(self.with_hint(
                    request,
                    format!(
                        "model endpoint {} refused the request: {reason}",
                        self.shown
                    ),
                )));
            }
            if retries + 1 >= tries {
                let times = crate::util::count(tries, "try", "tries");
                return Err(LlmError::Failed(format!(
                    "model endpoint {} failed after {times}: {reason}",
                    self.shown
                )));
            }
            // A server error that repeats word for word (a request the server cannot
            // read, answered with a 500) will not go away by retrying.
            if repeated {
                return Err(LlmError::Refused(self.with_hint(
                    request,
                    format!(
                        "model endpoint {} answered the same error twice, so it was not retried further: {reason}",
                        self.shown
                    ),
                )));
            }
            let delay = retry_after.unwrap_or_else(|| backoff(retries));
            if Instant::now() + delay >= deadline {
                return Err(LlmError::Failed(format!(
                    "model endpoint {}: {reason}; waiting {} to retry would pass the case's deadline",
                    self.shown,
                    format_duration(delay)
                )));
            }
            retries += 1;
            on_retry();
            eprintln!(
                "agentest: model endpoint {}: {}; retry {retries}/{} in {}",
                self.shown,
                crate::util::scrub(&reason),
                tries - 1,
                format_duration(delay)
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// The endpoint's headers, with the API key from its variable as a bearer token.
    fn headers_with_key(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = self.headers.clone();
        if let Some(var) = &self.api_key_env {
            let key = std::env::var(var).unwrap_or_default();
            crate::util::register_secret(&key);
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                LlmError::Failed(format!(
                    "the API key in `{var}` is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// One attempt, once a slot in flight is free; how it went tells the limiter
    /// whether the endpoint is overloaded.
    async fn attempt_in_slot(
        &self,
        request: &ChatRequest,
        headers: &HeaderMap,
        deadline: Instant,
        wait: &SlotWait,
    ) -> Result<Value, Attempt> {
        let slot = self.limiter.acquire(wait).await;
        let attempt = self.attempt(request, headers, deadline).await;
        match &attempt {
            Ok(_) => slot.observe(Load::Kept),
            Err(Attempt::Retry {
                overloaded: true, ..
            }) => slot.observe(Load::Overloaded),
            Err(_) => {}
        }
        attempt
    }

    async fn attempt(
        &self,
        request: &ChatRequest,
        headers: &HeaderMap,
        deadline: Instant,
    ) -> Result<Value, Attempt> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Attempt::Fatal(
                "the case's deadline passed before the model could be called".into(),
            ));
        }
        let timeout = self.timeout.min(left);
        let (status, retry_after, body) = self.send(request, headers, timeout).await?;
        self.answer_of(status, retry_after, &body)
    }

    /// Sends the request and reads the whole reply, within `timeout`.
    async fn send(
        &self,
        request: &ChatRequest,
        headers: &HeaderMap,
        timeout: Duration,
    ) -> Result<(reqwest::StatusCode, Option<Duration>, Vec<u8>), Attempt> {
        let sent = self
            .client
            .post(self.url.clone())
            .headers(headers.clone())
            .timeout(timeout)
            .json(request)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Err(Attempt::timed_out(format!(
                    "no answer within {}",
                    format_duration(timeout)
                )))
            }
            Err(e) => {
                return Err(Attempt::retry(format!(
                    "request failed: {}",
                    root_cause(&e)
                )))
            }
        };
        let status = response.status();
        let retry_after = crate::util::http::retry_after(response.headers());
        let body = match read_body(response).await {
            Ok(b) => b,
            Err(BodyError::TooLarge) => {
                return Err(Attempt::Fatal(format!(
                    "model endpoint {} sent a reply larger than {} MiB",
                    self.shown,
                    MAX_BODY_BYTES >> 20
                )))
            }
            Err(BodyError::TimedOut) => {
                return Err(Attempt::timed_out(format!(
                    "the reply did not finish within {}",
                    format_duration(timeout)
                )))
            }
            Err(BodyError::Read(e)) => {
                return Err(Attempt::retry(format!("the reply was cut off: {e}")))
            }
        };
        Ok((status, retry_after, body))
    }

    /// What a reply means: a chat completion, a status worth retrying, or a refusal.
    /// Its volatile fields (id, time, fingerprint) are dropped, so recordings compare.
    fn answer_of(
        &self,
        status: reqwest::StatusCode,
        retry_after: Option<Duration>,
        body: &[u8],
    ) -> Result<Value, Attempt> {
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(Attempt::Retry {
                reason: format!(
                    "HTTP {status}{}",
                    server_message(body)
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                retry_after,
                server_error: status == reqwest::StatusCode::INTERNAL_SERVER_ERROR,
                overloaded: status == reqwest::StatusCode::TOO_MANY_REQUESTS,
            });
        }
        if !status.is_success() {
            let msg = server_message(body)
                .unwrap_or_else(|| crate::util::clip(String::from_utf8_lossy(body).trim()));
            return Err(Attempt::Refused(format!(
                "model endpoint {} answered HTTP {status}: {msg}",
                self.shown
            )));
        }
        let mut value: Value = serde_json::from_slice(body).map_err(|e| {
            Attempt::Refused(format!(
                "model endpoint {} answered with invalid JSON ({e}): {}",
                self.shown,
                crate::util::clip(String::from_utf8_lossy(body).trim())
            ))
        })?;
        if !value["choices"][0]["message"].is_object() {
            return Err(Attempt::Refused(format!(
                "model endpoint {} answered without `choices[0].message`: {}",
                self.shown,
                crate::util::compact(&value)
            )));
        }
        if let Value::Object(m) = &mut value {
            for volatile in ["id", "created", "system_fingerprint"] {
                m.remove(volatile);
            }
        }
        Ok(value)
    }
}

enum Attempt {
    Retry {
        reason: String,
        retry_after: Option<Duration>,
        /// An HTTP 500 (not a gateway's or an overloaded server's 502, 503, 504): the
        /// same one twice in a row is not transient.
        server_error: bool,
        /// A timeout or a 429: the endpoint has more than it can take.
        overloaded: bool,
    },
    /// Something on our side ended the call (the deadline passed).
    Fatal(String),
    /// The endpoint answered, and no retry would change the answer: a 4xx, a body that
    /// is not a completion.
    Refused(String),
}

impl Attempt {
    fn retry(reason: String) -> Attempt {
        Attempt::Retry {
            reason,
            retry_after: None,
            server_error: false,
            overloaded: false,
        }
    }

    /// A timeout: retried, and a sign of an overloaded endpoint.
    fn timed_out(reason: String) -> Attempt {
        Attempt::Retry {
            reason,
            retry_after: None,
            server_error: false,
            overloaded: true,
        }
    }
}

enum BodyError {
    TooLarge,
    /// The body did not finish before the request's timeout.
    TimedOut,
    /// The connection broke off mid-body.
    Read(String),
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, BodyError> {
    if response
        .content_length()
        .is_some_and(|n| n as usize > MAX_BODY_BYTES)
    {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(BodyError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) if e.is_timeout() => return Err(BodyError::TimedOut),
            Err(e) => return Err(BodyError::Read(root_cause(&e))),
        }
    }
}

/// The server's own error text: `error.message` in the OpenAI error shape.
fn server_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v["error"]["message"]
        .as_str()
        .or_else(|| v["error"].as_str())
        .or_else(|| v["message"].as_str())
        .map(crate::util::clip)
}

/// Exponential backoff with full jitter between half and the whole step.
fn backoff(retry: u32) -> Duration {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let step = BACKOFF_BASE
        .saturating_mul(1 << retry.min(10))
        .min(BACKOFF_CAP);
    let salt = format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = 0.5 + 0.5 * SeededRng::new(u64::from(nanos), &salt).next_f64();
    step.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_capped() {
        for r in 0..20 {
            let d = backoff(r);
            let step = BACKOFF_BASE.saturating_mul(1 << r.min(10)).min(BACKOFF_CAP);
            assert!(d >= step / 2 && d <= step, "{r}: {d:?}");
        }
    }
}
