//! `a2a` agents (Agent2Agent). The agent card (at the base URL's
//! `/.well-known/agent-card.json`, or `card`) names the endpoint, binding and version; each
//! turn is one `SendMessage` (v1.0) or `message/send` (v0.3) over JSON-RPC, or one
//! `POST {endpoint}/message:send` over HTTP+JSON (with `stream = true`,
//! `SendStreamingMessage`, `message/stream` or `message:stream`, the events folded into
//! one result). One `contextId` per case (the server's);
//! a task awaiting input is continued with its `taskId`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::http::{Flow, HttpSession, HttpSpec};
use super::{CaseScope, Timed};
use crate::config::{A2aAgentConfig, A2aBinding, A2aVersion, Config};
use crate::errors::{AgentError, AgentSetupError};
use crate::protocol::{FileRef, Reply, Request};

/// Where the card is read from.
enum CardAt {
    /// A URL: the base URL's well-known path, or `card`.
    Url(reqwest::Url),
    /// A file (`card` that is not a URL), relative to the config's directory.
    File(PathBuf),
}

/// An `a2a` agent, ready to start conversations.
pub(crate) struct A2aSpec {
    /// How messages show the card's place (never a secret).
    pub(crate) shown: String,
    card: CardAt,
    /// The base URL's (or the card URL's) HTTP side: headers, client, timeout, retries.
    http: Arc<HttpSpec>,
    /// The headers, expanded, for the endpoint's requests.
    headers: Vec<(String, String)>,
    /// The base URL, when given: a card file's endpoint must be on its host.
    base: Option<reqwest::Url>,
    timeout: Option<Duration>,
    cfg: A2aAgentConfig,
    what: String,
    endpoint: tokio::sync::OnceCell<Arc<Endpoint>>,
}

/// The endpoint the card chose (or `binding` / `version` picked from it).
pub(crate) struct Endpoint {
    http: Arc<HttpSpec>,
    stream: bool,
    binding: A2aBinding,
    version: A2aVersion,
}

const WELL_KNOWN: &str = ".well-known/agent-card.json";

impl A2aSpec {
    pub(crate) fn new(
        cfg: &A2aAgentConfig,
        config: &Config,
        timeout: Option<Duration>,
        what: &str,
    ) -> Result<A2aSpec, AgentSetupError> {
        let card_is_url = cfg.card.as_ref().map(|c| c.contains("://"));
        // The HTTP side is the card URL's when there is one, else the base URL's.
        let (at, card) = match (&cfg.card, card_is_url, &cfg.url) {
            (Some(c), Some(true), _) => (c.clone(), None),
            (Some(c), _, Some(u)) => (u.clone(), Some(config.dir.join(c))),
            (Some(c), _, None) => ("http://127.0.0.1/".to_string(), Some(config.dir.join(c))),
            (None, _, Some(u)) => (u.clone(), None),
            (None, _, None) => return Err(AgentSetupError::A2aNoUrl),
        };
        let wire = super::wire::Wire::plain(what)?;
        let http = super::http::http_spec(&at, &cfg.headers, timeout, cfg.retries, wire, what)?;
        let base = cfg.url.as_ref().map(|_| http.url.clone());
        let (card, shown) = match card {
            Some(path) => {
                let shown = path.display().to_string();
                (CardAt::File(path), shown)
            }
            None if cfg.card.is_some() => (CardAt::Url(http.url.clone()), http.shown.clone()),
            None => {
                let mut url = http.url.clone();
                if let Ok(mut segments) = url.path_segments_mut() {
                    segments.pop_if_empty().extend(WELL_KNOWN.split('/'));
                }
                let shown = format!("{}/{WELL_KNOWN}", http.shown.trim_end_matches('/'));
                (CardAt::Url(url), shown)
            }
        };
        Ok(A2aSpec {
            shown,
            card,
            headers: super::http::expanded_headers(&cfg.headers, what)?,
            http: Arc::new(http),
            base,
            timeout,
            cfg: cfg.clone(),
            what: what.to_string(),
            endpoint: tokio::sync::OnceCell::new(),
        })
    }

    /// The endpoint, from the card read on first use.
    pub(crate) async fn endpoint(&self) -> Result<Arc<Endpoint>, AgentError> {
        self.endpoint
            .get_or_try_init(|| async {
                let card = self.read_card().await?;
                self.choose(&card).map(Arc::new)
            })
            .await
            .cloned()
    }

    async fn read_card(&self) -> Result<Value, AgentError> {
        match &self.card {
            CardAt::Url(url) => self.http.get_json(url, &self.shown).await,
            CardAt::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    shape(&self.shown, "a readable agent card file", &e.to_string())
                })?;
                serde_json::from_str(&text)
                    .map_err(|e| shape(&self.shown, "an agent card (JSON)", &e.to_string()))
            }
        }
    }

    /// The endpoint of the card's first interface (in its order of preference) that
    /// matches `binding` and `version`; the legacy top-level `url` / `preferredTransport`
    /// / `protocolVersion` only when `supportedInterfaces` is absent.
    fn choose(&self, card: &Value) -> Result<Endpoint, AgentError> {
        let offered = interfaces(card).ok_or_else(|| {
            shape(
                &self.shown,
                "an agent card with `supportedInterfaces` (or a top-level `url`)",
                &card.to_string(),
            )
        })?;
        let found = offered.iter().find(|(_, b, v)| {
            b.is_some()
                && v.is_some()
                && self.cfg.binding.is_none_or(|want| *b == Some(want))
                && self.cfg.version.is_none_or(|want| *v == Some(want))
        });
        let Some((url, Some(binding), Some(version))) = found else {
            let wanted = format!(
                "an interface agentest speaks (JSONRPC or HTTP+JSON, version 1.0 or 0.3{}) in the card's `supportedInterfaces`",
                match (self.cfg.binding, self.cfg.version) {
                    (None, None) => String::new(),
                    (b, v) => format!(", matching binding = {b:?}, version = {v:?}"),
                }
            );
            return Err(shape(&self.shown, &wanted, &card.to_string()));
        };
        let from = match &self.card {
            CardAt::Url(u) => Some(u.clone()),
            CardAt::File(_) => self.base.clone(),
        };
        let url = match &from {
            Some(f) => f.join(url),
            None => reqwest::Url::parse(url),
        }
        .map_err(|e| shape(&self.shown, "an interface URL", &format!("{url:?}: {e}")))?;
        if let Some(from) = from.filter(|_| !self.cfg.allow_card_redirect) {
            if from.origin() != url.origin() {
                return Err(shape(
                    &self.shown,
                    &format!(
                        "an endpoint on {} (where the card came from; set `allow_card_redirect = true` to allow another host)",
                        from.origin().ascii_serialization()
                    ),
                    &crate::util::shown_url(url.as_str()),
                ));
            }
        }
        let mut headers = self.headers.clone();
        // a2a-sdk takes a call without the header as 0.3, and refuses 1.0 on a 0.3 method.
        if *version == A2aVersion::V1_0 {
            headers.push(("A2A-Version".into(), "1.0".into()));
        }
        let shown = shown_under(&self.http.url, &self.http.shown, &url);
        let http = HttpSpec::new(
            url,
            shown,
            headers,
            super::http::Patience {
                timeout: self.timeout,
                retries: self.cfg.retries.unwrap_or(super::http::DEFAULT_RETRIES),
            },
            super::wire::Wire::plain(&self.what)
                .map_err(|e| shape(&self.shown, "a usable endpoint", &e.to_string()))?,
            &self.what,
        )
        .map_err(|e| shape(&self.shown, "a usable endpoint", &e.to_string()))?;
        Ok(Endpoint {
            http: Arc::new(http),
            stream: self.cfg.stream,
            binding: *binding,
            version: *version,
        })
    }
}

/// How messages show the endpoint `url`: under the base URL as the config writes it
/// (`${A2A_URL}/rpc`) when it is there, since the expanded base may hold a secret and
/// would be masked whole; else the URL itself, masked.
fn shown_under(base: &reqwest::Url, base_shown: &str, url: &reqwest::Url) -> String {
    let prefix = base.as_str().trim_end_matches('/');
    match url.as_str().strip_prefix(prefix) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?', '#']) => format!(
            "{}{}",
            base_shown.trim_end_matches('/'),
            crate::util::shown_url(rest)
        ),
        _ => crate::util::shown_url(url.as_str()),
    }
}

type Interface<'a> = (&'a str, Option<A2aBinding>, Option<A2aVersion>);

/// A card's interfaces in its order of preference: `supportedInterfaces` (v1.0), else
/// the legacy top-level `url` / `preferredTransport` / `protocolVersion` and
/// `additionalInterfaces` (v0.3).
fn interfaces(card: &Value) -> Option<Vec<Interface<'_>>> {
    if let Some(list) = card["supportedInterfaces"].as_array() {
        return Some(
            list.iter()
                .filter_map(|i| {
                    Some((
                        i["url"].as_str()?,
                        i["protocolBinding"].as_str().and_then(A2aBinding::parse),
                        i["protocolVersion"].as_str().and_then(A2aVersion::parse),
                    ))
                })
                .collect(),
        );
    }
    let url = card["url"].as_str()?;
    let version = card["protocolVersion"]
        .as_str()
        .map_or(Some(A2aVersion::V0_3), A2aVersion::parse);
    let preferred = card["preferredTransport"]
        .as_str()
        .map_or(Some(A2aBinding::JsonRpc), A2aBinding::parse);
    let mut all = vec![(url, preferred, version)];
    for i in card["additionalInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(u) = i["url"].as_str() {
            all.push((
                u,
                i["transport"].as_str().and_then(A2aBinding::parse),
                version,
            ));
        }
    }
    Some(all)
}

/// One case's conversation: the server's context, and the task awaiting input.
pub(crate) struct A2aSession {
    endpoint: Arc<Endpoint>,
    http: HttpSession,
    context_id: Option<String>,
    task_id: Option<String>,
    sent: u64,
}

impl A2aSession {
    pub(crate) fn new(endpoint: Arc<Endpoint>, scope: &CaseScope) -> A2aSession {
        A2aSession {
            http: HttpSession::new(endpoint.http.clone(), scope),
            endpoint,
            context_id: None,
            task_id: None,
            sent: 0,
        }
    }

    /// The W3C `traceparent` of the turn to come (see [`HttpSession::set_traceparent`]).
    pub(crate) fn set_traceparent(&mut self, traceparent: Option<&str>) {
        self.http.set_traceparent(traceparent);
    }

    /// The conversation's id as the agent knows it: the `contextId`, once given.
    pub(crate) fn conversation_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    /// Sends one turn: the user's message in the case's context (and, while a task
    /// awaits input, in that task).
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        self.sent += 1;
        let v1 = self.endpoint.version == A2aVersion::V1_0;
        let mut message = Map::new();
        message.insert(
            "messageId".into(),
            json!(format!("agentest-{}-{}", request.test_id, self.sent)),
        );
        if v1 {
            message.insert("role".into(), json!("ROLE_USER"));
            message.insert("parts".into(), json!([{"text": request.input}]));
        } else {
            message.insert("kind".into(), json!("message"));
            message.insert("role".into(), json!("user"));
            message.insert(
                "parts".into(),
                json!([{"kind": "text", "text": request.input}]),
            );
        }
        for (key, value) in [("contextId", &self.context_id), ("taskId", &self.task_id)] {
            if let Some(v) = value {
                message.insert(key.into(), json!(v));
            }
        }
        let params = json!({ "message": message });
        let answer = self.exchange(params, v1).await?;
        let turn = turn_of(answer.value, &self.endpoint.http.shown)?;
        if self.context_id.is_none() {
            self.context_id = turn.context_id;
        }
        self.task_id = turn.reply.awaiting_input.and(turn.task_id);
        Ok(Timed {
            value: turn.reply,
            first_byte: answer.first_byte,
        })
    }
}

impl A2aSession {
    /// One exchange: the call for the binding, version and `stream`, and its result
    /// (a streamed answer's events folded into one).
    async fn exchange(&self, params: Value, v1: bool) -> Result<Timed<Value>, AgentError> {
        let spec = &self.endpoint.http;
        let stream = self.endpoint.stream;
        let rpc = self.endpoint.binding == A2aBinding::JsonRpc;
        let (url, shown, body) = if rpc {
            let method = match (v1, stream) {
                (true, false) => "SendMessage",
                (true, true) => "SendStreamingMessage",
                (false, false) => "message/send",
                (false, true) => "message/stream",
            };
            let body =
                json!({"jsonrpc": "2.0", "id": self.sent, "method": method, "params": params});
            (spec.url.clone(), spec.shown.clone(), body)
        } else {
            let verb = if stream {
                "message:stream"
            } else {
                "message:send"
            };
            let mut url = spec.url.clone();
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.pop_if_empty().push(verb);
            }
            let shown = format!("{}/{verb}", spec.shown.trim_end_matches('/'));
            (url, shown, params)
        };
        if !stream {
            let answer = self.http.post(&url, &shown, &body).await?;
            let value = if rpc {
                rpc_result(answer.value, &shown)?
            } else {
                answer.value
            };
            return Ok(Timed {
                value,
                first_byte: answer.first_byte,
            });
        }
        // Each event is folded in as it comes; the first to carry text or data is the
        // first token.
        let mut results = Vec::new();
        let read = self
            .http
            .post_events(&url, &shown, &body, |event| {
                if event.data.is_empty() {
                    return Ok(Flow::More);
                }
                let value: Value = serde_json::from_str(&event.data)
                    .map_err(|_| shape(&shown, "JSON in each event of the stream", &event.data))?;
                let value = if rpc {
                    rpc_result(value, &shown)?
                } else {
                    value
                };
                let flow = if carries_reply(&value) {
                    Flow::Token
                } else {
                    Flow::More
                };
                results.push(value);
                Ok(flow)
            })
            .await?;
        Ok(Timed {
            value: fold_stream(results, &shown)?,
            first_byte: read.first_byte,
        })
    }
}

/// Whether a stream's event carries part of the reply: a message, an artifact, or a
/// status with a message, with a part in it.
fn carries_reply(event: &Value) -> bool {
    let has_parts = |v: &Value| v["parts"].as_array().is_some_and(|p| !p.is_empty());
    [
        &event["message"],
        event,
        &event["artifactUpdate"]["artifact"],
        &event["artifact"],
        &event["statusUpdate"]["status"]["message"],
        &event["status"]["message"],
        &event["task"]["status"]["message"],
    ]
    .into_iter()
    .any(has_parts)
}

/// A stream's events as one result: its Message, or its Task with the status updates
/// applied and the artifact updates added (`append` extends an artifact's parts).
fn fold_stream(events: Vec<Value>, shown: &str) -> Result<Value, AgentError> {
    let mut task: Option<Value> = None;
    for mut event in events {
        let kind = event["kind"].as_str().unwrap_or_default().to_string();
        if event["message"].is_object() || kind == "message" {
            return Ok(event);
        }
        if event["task"].is_object() {
            task = Some(event["task"].take());
            continue;
        }
        if kind == "task" {
            task = Some(event);
            continue;
        }
        let update = if event["statusUpdate"].is_object() {
            event["statusUpdate"].take()
        } else if event["artifactUpdate"].is_object() {
            event["artifactUpdate"].take()
        } else if kind == "status-update" || kind == "artifact-update" {
            event
        } else {
            return Err(shape(
                shown,
                "a task, message, status update or artifact update in each event",
                &event.to_string(),
            ));
        };
        let t = task.get_or_insert_with(
            || json!({"id": update["taskId"], "contextId": update["contextId"]}),
        );
        if update["status"].is_object() {
            t["status"] = update["status"].clone();
        }
        if update["artifact"].is_object() {
            add_artifact(t, update["artifact"].clone(), update["append"] == true);
        }
    }
    task.map(|t| json!({ "task": t }))
        .ok_or_else(|| shape(shown, "a task or a message in the event stream", "no event"))
}

fn add_artifact(task: &mut Value, artifact: Value, append: bool) {
    if !task["artifacts"].is_array() {
        task["artifacts"] = json!([]);
    }
    let list = task["artifacts"].as_array_mut().expect("an array");
    let same = list
        .iter_mut()
        .find(|a| a["artifactId"] == artifact["artifactId"] && !artifact["artifactId"].is_null());
    match same {
        Some(existing) if append => {
            let parts = artifact["parts"].as_array().cloned().unwrap_or_default();
            if let Some(mine) = existing["parts"].as_array_mut() {
                mine.extend(parts);
            }
        }
        Some(existing) => *existing = artifact,
        None => list.push(artifact),
    }
}

fn shape(shown: &str, expected: &str, body: &str) -> AgentError {
    AgentError::A2aShape {
        shown: shown.to_string(),
        expected: expected.to_string(),
        body: crate::util::clip(body),
    }
}

/// A JSON-RPC answer's `result`; its `error` (which comes with HTTP 200) is a case error.
fn rpc_result(mut body: Value, shown: &str) -> Result<Value, AgentError> {
    if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
        let mut message = error["message"].as_str().unwrap_or_default().to_string();
        if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
            message = format!("{message} ({})", crate::util::clip(&data.to_string()));
        }
        return Err(AgentError::A2aRpc {
            shown: shown.to_string(),
            code: error["code"].as_i64().unwrap_or(0),
            message,
        });
    }
    let rpc = body["jsonrpc"] == "2.0";
    match body.get_mut("result") {
        Some(result) if rpc => Ok(result.take()),
        _ => Err(shape(
            shown,
            "a JSON-RPC 2.0 answer with `result` or `error`",
            &body.to_string(),
        )),
    }
}

/// A turn's reply, with the ids the next turn needs.
struct Turn {
    reply: Reply,
    context_id: Option<String>,
    task_id: Option<String>,
}

/// The reply of a `SendMessage` result: a Task (`{"task": …}` in v1.0, `kind: "task"` in
/// v0.3) by its state, or a Message (a completed turn).
fn turn_of(result: Value, shown: &str) -> Result<Turn, AgentError> {
    let (task, message) = match (&result["task"], &result["message"], result["kind"].as_str()) {
        (t @ Value::Object(_), _, _) => (Some(t), None),
        (_, m @ Value::Object(_), _) => (None, Some(m)),
        (_, _, Some("task")) => (Some(&result), None),
        (_, _, Some("message")) => (None, Some(&result)),
        _ => {
            return Err(shape(
                shown,
                "a Task or a Message (`task` / `message`, or `kind`)",
                &result.to_string(),
            ))
        }
    };
    let id = |v: &Value, key: &str| v[key].as_str().map(str::to_string);
    if let Some(m) = message {
        let mut parts = Parts::default();
        parts.add(&m["parts"], None);
        return Ok(Turn {
            reply: parts.into_reply(),
            context_id: id(m, "contextId"),
            task_id: None,
        });
    }
    let task = task.expect("a task when not a message");
    let raw_state = task["status"]["state"].as_str().unwrap_or_default();
    let state = normal_state(raw_state);
    let mut parts = Parts::default();
    parts.add(&task["status"]["message"]["parts"], None);
    let status_text = parts.text.join("\n");
    let awaiting = match state.as_str() {
        "input-required" | "auth-required" => true,
        "completed" => false,
        "failed" | "rejected" | "canceled" => {
            return Err(AgentError::A2aTask {
                shown: shown.to_string(),
                state: raw_state.to_string(),
                message: if status_text.is_empty() {
                    "(no status message)".into()
                } else {
                    status_text
                },
            })
        }
        _ => {
            return Err(shape(
                shown,
                "a task state of completed, input-required, auth-required, failed, rejected or canceled",
                &task["status"].to_string(),
            ))
        }
    };
    for artifact in task["artifacts"].as_array().into_iter().flatten() {
        let name = artifact["name"]
            .as_str()
            .or_else(|| artifact["artifactId"].as_str());
        parts.add(&artifact["parts"], name);
    }
    let mut reply = parts.into_reply();
    if awaiting {
        reply.awaiting_input = Some(true);
        reply.input_hint = (!status_text.is_empty()).then_some(status_text);
    }
    Ok(Turn {
        reply,
        context_id: id(task, "contextId"),
        task_id: id(task, "id"),
    })
}

/// `TASK_STATE_INPUT_REQUIRED` (v1.0) and `input-required` (v0.3) alike.
fn normal_state(state: &str) -> String {
    let lower = state.to_ascii_lowercase();
    lower
        .strip_prefix("task_state_")
        .unwrap_or(&lower)
        .replace('_', "-")
        .replace("cancelled", "canceled")
}

/// A turn's parts: texts in order, data by artifact name, files listed.
#[derive(Default)]
struct Parts {
    text: Vec<String>,
    data: Map<String, Value>,
    files: Vec<FileRef>,
}

impl Parts {
    fn add(&mut self, parts: &Value, name: Option<&str>) {
        for part in parts.as_array().into_iter().flatten() {
            if let Some(t) = part["text"].as_str() {
                self.text.push(t.to_string());
            } else if let Some(file) = file_of(part) {
                self.files.push(FileRef {
                    artifact: name.map(str::to_string),
                    ..file
                });
            } else if let Some(d) = part.get("data").filter(|_| part["kind"] != "file") {
                // v0.3 wraps a data part's value as `data`; v1.0 holds any JSON value.
                let key = name.unwrap_or("message").to_string();
                let value = integral(d.clone());
                match self.data.get_mut(&key) {
                    Some(Value::Array(all)) => all.push(value),
                    Some(first) => *first = json!([first.take(), value]),
                    None => {
                        self.data.insert(key, value);
                    }
                }
            }
        }
    }

    fn into_reply(self) -> Reply {
        let mut reply = Reply::default();
        if !self.text.is_empty() {
            reply.content = Value::String(self.text.join("\n"));
        }
        if !self.data.is_empty() {
            reply.data = Some(Value::Object(self.data));
        }
        reply.files = self.files;
        reply
    }
}

/// A file part, as the turn's record lists it: v1.0's `url` or `raw` (base64) with
/// `filename` and `mediaType`; v0.3's `file` with `uri` or `bytes`, `name`, `mimeType`.
fn file_of(part: &Value) -> Option<FileRef> {
    let (file, name, media) = if part["kind"] == "file" || part["file"].is_object() {
        (&part["file"], "name", "mimeType")
    } else if part.get("url").is_some() || part.get("raw").is_some() {
        (part, "filename", "mediaType")
    } else {
        return None;
    };
    // Protobuf's defaults (an empty name) are no value.
    let text = |key: &str| {
        file[key]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    // The size of base64 text's bytes, padding aside; the bytes are never kept.
    let size = |b64: &str| {
        let b64 = b64.trim_end_matches('=');
        (b64.len() * 3 / 4) as u64
    };
    Some(FileRef {
        name: text(name),
        media_type: text(media),
        uri: text("url").or_else(|| text("uri")),
        bytes: file["raw"]
            .as_str()
            .or_else(|| file["bytes"].as_str())
            .map(size),
        artifact: None,
    })
}

/// Data parts carry numbers as protobuf doubles (`2.0`): integral ones become integers,
/// so that `2` in an assertion matches.
fn integral(v: Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => json!(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(integral).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, integral(v))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v0_3_tasks_map_alike() {
        let v1 = json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "Which city?"}]}}}});
        let t = turn_of(v1, "u").unwrap();
        assert_eq!(
            (
                t.reply.awaiting_input,
                t.reply.content,
                t.task_id.as_deref()
            ),
            (Some(true), json!("Which city?"), Some("t"))
        );
        let v03 = json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "completed"},
            "artifacts": [{"name": "answer", "parts": [{"kind": "text", "text": "Booked."}]},
                          {"name": "booking", "parts": [{"kind": "data", "data": {"nights": 2.0, "rate": 1.5}}]}]});
        let t = turn_of(v03, "u").unwrap();
        assert_eq!(t.reply.content, json!("Booked."));
        assert_eq!(
            t.reply.data,
            Some(json!({"booking": {"nights": 2, "rate": 1.5}}))
        );
        assert_eq!(t.reply.awaiting_input, None);
    }

    #[test]
    fn an_endpoint_under_the_base_url_is_shown_as_the_config_writes_it() {
        let base = reqwest::Url::parse("http://127.0.0.1:9/").unwrap();
        let at = |u: &str| shown_under(&base, "${A2A_URL}", &reqwest::Url::parse(u).unwrap());
        assert_eq!(at("http://127.0.0.1:9/rpc"), "${A2A_URL}/rpc");
        assert_eq!(at("http://127.0.0.1:9/rpc?key=1"), "${A2A_URL}/rpc?…");
        assert_eq!(at("http://127.0.0.1:99/rpc"), "http://127.0.0.1:99/rpc");
    }

    #[test]
    fn file_parts_are_listed_by_artifact_without_their_bytes() {
        let v1 = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"name": "receipt", "parts": [
                {"raw": "aGVsbG8=", "filename": "r.txt", "mediaType": "text/plain"},
                {"url": "https://x/r.pdf", "mediaType": "application/pdf"}]}]}});
        let files = turn_of(v1, "u").unwrap().reply.files;
        let names: Vec<_> = files
            .iter()
            .map(|f| {
                (
                    f.name.as_deref(),
                    f.uri.as_deref(),
                    f.bytes,
                    f.artifact.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (Some("r.txt"), None, Some(5), Some("receipt")),
                (None, Some("https://x/r.pdf"), None, Some("receipt"))
            ]
        );
        let v03 = json!({"kind": "message", "parts": [{"kind": "file",
            "file": {"bytes": "aGk=", "name": "a.bin", "mimeType": "application/octet-stream"}}]});
        let f = &turn_of(v03, "u").unwrap().reply.files[0];
        assert_eq!(
            (f.name.as_deref(), f.media_type.as_deref(), f.bytes),
            (Some("a.bin"), Some("application/octet-stream"), Some(2))
        );
    }

    #[test]
    fn bad_states_and_rpc_errors_are_case_errors() {
        let e = turn_of(
            json!({"task": {"status": {"state": "TASK_STATE_FAILED",
            "message": {"parts": [{"text": "no rooms"}]}}}}),
            "u",
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "A2A agent at u: the task ended TASK_STATE_FAILED: no rooms"
        );
        let e = turn_of(json!({"task": {"status": {"state": "sleeping"}}}), "u")
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "A2A agent at u: expected a task state of completed, input-required, auth-required, failed, rejected or canceled, got: {\"state\":\"sleeping\"}");
        let e = rpc_result(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}),
            "u",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "A2A agent at u: JSON-RPC error -32601: Method not found"
        );
    }

    #[test]
    fn a_stream_folds_into_its_task() {
        let events = vec![
            json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "submitted"}}),
            json!({"kind": "artifact-update", "taskId": "t", "artifact": {"artifactId": "a", "name": "answer", "parts": [{"kind": "text", "text": "Boo"}]}}),
            json!({"kind": "artifact-update", "taskId": "t", "append": true, "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "ked."}]}}),
            json!({"kind": "status-update", "taskId": "t", "status": {"state": "completed"}, "final": true}),
        ];
        let t = turn_of(fold_stream(events, "u").unwrap(), "u").unwrap();
        assert_eq!(t.reply.content, json!("Boo\nked."));
        assert_eq!(t.context_id.as_deref(), Some("c"));
        let v1 = vec![json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"parts": [{"text": "Which city?"}]}}}})];
        let t = turn_of(fold_stream(v1, "u").unwrap(), "u").unwrap();
        assert_eq!(
            (t.reply.awaiting_input, t.task_id.as_deref()),
            (Some(true), Some("t"))
        );
        let e = fold_stream(vec![], "u").unwrap_err();
        assert_eq!(
            e.to_string(),
            "A2A agent at u: expected a task or a message in the event stream, got: no event"
        );
    }

    #[test]
    fn legacy_cards_are_read_only_without_supported_interfaces() {
        let card = json!({"url": "http://h/rpc", "protocolVersion": "0.3.0",
            "supportedInterfaces": [{"url": "http://h/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]});
        assert_eq!(
            interfaces(&card).unwrap(),
            vec![(
                "http://h/rest",
                Some(A2aBinding::HttpJson),
                Some(A2aVersion::V1_0)
            )]
        );
        let legacy = json!({"url": "http://h/rpc", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"});
        assert_eq!(
            interfaces(&legacy).unwrap(),
            vec![(
                "http://h/rpc",
                Some(A2aBinding::JsonRpc),
                Some(A2aVersion::V0_3)
            )]
        );
    }
}
