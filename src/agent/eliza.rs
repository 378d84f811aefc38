//! `eliza` agents: an agent of an ElizaOS 1.x server, reached through its messaging
//! sessions API. One session per case (`POST /api/messaging/sessions`); each turn one
//! `POST /api/messaging/sessions/{id}/messages` with `transport: "http"`, whose answer
//! holds the agent's reply (`agentResponse`: `text`, `actions`, `thought`), or, with
//! `stream = true`, `transport: "sse"`, whose `done` event is the reply.

use std::sync::Arc;

use serde_json::{json, Value};

use super::http::{Flow, HttpSession, HttpSpec};
use super::{CaseScope, Timed};
use crate::errors::AgentError;
use crate::protocol::{Reply, Request};

/// An `eliza` agent, ready to start conversations.
pub(crate) struct ElizaSpec {
    /// The server's base URL, headers, client, timeout and retries.
    pub(crate) http: Arc<HttpSpec>,
    /// The agent as the config names it: a UUID, or a name.
    pub(crate) agent: String,
    stream: bool,
    /// The agent's UUID, looked up once when the config names it.
    id: tokio::sync::OnceCell<String>,
}

impl ElizaSpec {
    pub(crate) fn new(http: HttpSpec, agent: String, stream: bool) -> ElizaSpec {
        ElizaSpec {
            http: Arc::new(http),
            agent,
            stream,
            id: tokio::sync::OnceCell::new(),
        }
    }

    /// The URL of `path` under the server's base URL, and how messages show it.
    fn at(&self, path: &[&str]) -> (reqwest::Url, String) {
        self.http.at(path)
    }

    /// The agent's UUID: `agent_id` itself when it is one, else the one agent of that
    /// name in `GET /api/agents` (read once, by the first case that needs it).
    pub(crate) async fn agent_id(&self) -> Result<String, AgentError> {
        if is_uuid(&self.agent) {
            return Ok(self.agent.clone());
        }
        self.id
            .get_or_try_init(|| async {
                let (url, shown) = self.at(&["api", "agents"]);
                let list = self.http.get_json(&url, &shown).await?;
                agent_named(&list, &self.agent, &shown)
            })
            .await
            .cloned()
    }
}

/// One case's conversation: its session, made on the first turn.
pub(crate) struct ElizaSession {
    spec: Arc<ElizaSpec>,
    http: HttpSession,
    session: Option<String>,
}

impl ElizaSession {
    pub(crate) fn new(spec: Arc<ElizaSpec>, scope: &CaseScope) -> ElizaSession {
        ElizaSession {
            http: HttpSession::new(spec.http.clone(), scope),
            spec,
            session: None,
        }
    }

    /// The W3C `traceparent` of the turn to come (see [`HttpSession::set_traceparent`]).
    pub(crate) fn set_traceparent(&mut self, traceparent: Option<&str>) {
        self.http.set_traceparent(traceparent);
    }

    /// The conversation's id as the server knows it: the session, once made.
    pub(crate) fn conversation_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Sends one turn in the case's session and reads the agent's reply.
    pub(crate) async fn send(&mut self, request: &Request) -> Result<Timed<Reply>, AgentError> {
        let session = self.session(request).await?;
        let (url, shown) = self
            .spec
            .at(&["api", "messaging", "sessions", &session, "messages"]);
        let transport = if self.spec.stream { "sse" } else { "http" };
        let body = json!({
            "content": request.input,
            "transport": transport,
            "metadata": {"source": "agentest", "test_id": request.test_id, "turn": request.turn},
        });
        if !self.spec.stream {
            let answer = self.http.post(&url, &shown, &body).await?;
            let reply = reply_of_answer(&answer.value, &shown)?;
            return Ok(Timed {
                value: reply,
                first_byte: answer.first_byte,
            });
        }
        let mut done = Done::default();
        let read = self
            .http
            .post_events(&url, &shown, &body, |event| done.take(event, &shown))
            .await?;
        let reply = done.reply(&shown)?;
        Ok(Timed {
            value: reply,
            first_byte: read.first_byte,
        })
    }

    /// The case's session, made on its first turn for a user of its own: ElizaOS keeps
    /// what it learns per user, and one case must not see another's.
    async fn session(&mut self, request: &Request) -> Result<String, AgentError> {
        if let Some(s) = &self.session {
            return Ok(s.clone());
        }
        let agent = self.spec.agent_id().await?;
        let (url, shown) = self.spec.at(&["api", "messaging", "sessions"]);
        let body = json!({
            "agentId": agent,
            "userId": user_id(),
            "metadata": {"source": "agentest", "test_id": request.test_id},
        });
        let answer = self.http.post(&url, &shown, &body).await?.value;
        let id = answer["sessionId"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| shape(&shown, "a session with a `sessionId`", &answer))?
            .to_string();
        self.session = Some(id.clone());
        Ok(id)
    }
}

/// A fresh user id (a version 4 UUID): unique per case run.
fn user_id() -> String {
    let mut b: [u8; 16] = crate::util::ids::fresh();
    // The version (4) and variant (RFC 4122) bits, which ElizaOS's UUID check requires.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = crate::util::ids::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Whether `s` is written as a UUID (`8-4-4-4-12` hex digits).
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The id of the one agent named `name` in a `GET /api/agents` answer
/// (`{"success": true, "data": {"agents": [{"id", "name"}]}}`).
fn agent_named(list: &Value, name: &str, shown: &str) -> Result<String, AgentError> {
    let agents = list["data"]["agents"].as_array().ok_or_else(|| {
        shape(
            shown,
            "the agents list (`data.agents`, an array of `{id, name}`)",
            list,
        )
    })?;
    let named = |exact: bool| -> Vec<&Value> {
        agents
            .iter()
            .filter(|a| {
                let n = a["name"].as_str().unwrap_or_default();
                if exact {
                    n == name
                } else {
                    n.eq_ignore_ascii_case(name)
                }
            })
            .collect()
    };
    // An exact name first; a name that differs only in case when none is exact.
    let mut found = named(true);
    if found.is_empty() {
        found = named(false);
    }
    let fail = |problem: String| AgentError::ElizaAgent {
        shown: shown.to_string(),
        problem,
    };
    match found.as_slice() {
        [one] => one["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| shape(shown, "an agent with an `id`", one)),
        [] => {
            let names: Vec<String> = agents
                .iter()
                .map(|a| format!("{:?}", a["name"].as_str().unwrap_or("?")))
                .collect();
            Err(fail(format!(
                "no agent named {name:?} (it runs {}); set `agent_id` to one of these names or to an agent's UUID",
                if names.is_empty() {
                    "no agent".to_string()
                } else {
                    names.join(", ")
                }
            )))
        }
        many => {
            let ids: Vec<&str> = many.iter().filter_map(|a| a["id"].as_str()).collect();
            Err(fail(format!(
                "{} agents are named {name:?} ({}); set `agent_id` to the UUID of the one to test",
                many.len(),
                ids.join(", ")
            )))
        }
    }
}

fn shape(shown: &str, expected: &str, body: &Value) -> AgentError {
    AgentError::ElizaShape {
        shown: shown.to_string(),
        expected: expected.to_string(),
        body: crate::util::clip(&body.to_string()),
    }
}

/// The reply in an answer to a `transport: "http"` message
/// (`{"success": true, "agentResponse": {…}}`).
fn reply_of_answer(answer: &Value, shown: &str) -> Result<Reply, AgentError> {
    if answer["success"] == false {
        return Err(AgentError::ElizaFailed {
            shown: shown.to_string(),
            message: error_text(&answer["error"]),
        });
    }
    match answer.get("agentResponse") {
        Some(content) if content.is_object() => reply_of_content(content, shown),
        _ => Err(shape(
            shown,
            "the agent's reply (`agentResponse` with `text` or `actions`; none means the agent chose not to answer)",
            answer,
        )),
    }
}

/// A server's `error`: a string, or `{code, message}`.
fn error_text(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_string),
        Value::Null => "(no error message)".into(),
        other => other.to_string(),
    }
}

/// A reply from an ElizaOS `Content`: `text` the content, `actions` the turn's actions,
/// `thought` kept in the record. One with neither text nor actions is no reply.
fn reply_of_content(content: &Value, shown: &str) -> Result<Reply, AgentError> {
    let text = content["text"].as_str().filter(|t| !t.trim().is_empty());
    let actions: Vec<String> = content["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    if text.is_none() && actions.is_empty() {
        return Err(shape(shown, "a reply with `text` or `actions`", content));
    }
    let mut reply = Reply::text(text.unwrap_or_default());
    reply.actions = actions;
    reply.thought = content["thought"]
        .as_str()
        .filter(|t| !t.trim().is_empty())
        .map(str::to_string);
    Ok(reply)
}

/// A `transport: "sse"` answer being read: `user_message`, then `chunk`s (the first is
/// the first token), then `done` with the reply, or `error`.
#[derive(Default)]
struct Done {
    content: Option<Value>,
    /// The chunks' text, for a stream that ends without `done`.
    chunks: String,
}

impl Done {
    fn take(&mut self, event: super::sse::Event, shown: &str) -> Result<Flow, AgentError> {
        let parse = || -> Result<Value, AgentError> {
            serde_json::from_str(&event.data).map_err(|_| {
                shape(
                    shown,
                    "JSON in each event",
                    &Value::String(event.data.clone()),
                )
            })
        };
        Ok(match event.event.as_str() {
            "chunk" => {
                if let Some(c) = parse()?["chunk"].as_str() {
                    if self.chunks.len() < 4096 {
                        self.chunks.push_str(c);
                    }
                }
                Flow::Token
            }
            "done" => {
                self.content = Some(parse()?);
                Flow::Done
            }
            "error" => {
                return Err(AgentError::ElizaFailed {
                    shown: shown.to_string(),
                    message: error_text(&parse()?["error"]),
                })
            }
            _ => Flow::More,
        })
    }

    fn reply(self, shown: &str) -> Result<Reply, AgentError> {
        match self.content {
            Some(content) => reply_of_content(&content, shown),
            None => Err(shape(
                shown,
                "a `done` event ending the stream",
                &Value::String(if self.chunks.is_empty() {
                    "(the stream ended without one)".into()
                } else {
                    format!("(the stream ended without one, after: {})", self.chunks)
                }),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_fresh_version_4_uuids() {
        let (a, b) = (user_id(), user_id());
        assert!(is_uuid(&a) && is_uuid(&b), "{a} {b}");
        assert_ne!(a, b);
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]), "{a}");
        assert!(!is_uuid("Ada") && !is_uuid("00000000-0000-0000-0000-00000000000g"));
    }

    #[test]
    fn a_name_is_found_once_or_said_missing_or_ambiguous() {
        let list = json!({"success": true, "data": {"agents": [
            {"id": "1", "name": "Ada"}, {"id": "2", "name": "Bob"}, {"id": "3", "name": "bob"}]}});
        assert_eq!(agent_named(&list, "Ada", "u").unwrap(), "1");
        assert_eq!(agent_named(&list, "ada", "u").unwrap(), "1");
        assert_eq!(agent_named(&list, "bob", "u").unwrap(), "3");
        let e = agent_named(&list, "Eve", "u").unwrap_err().to_string();
        assert_eq!(e, "ElizaOS server at u: no agent named \"Eve\" (it runs \"Ada\", \"Bob\", \"bob\"); set `agent_id` to one of these names or to an agent's UUID");
        let two = json!({"data": {"agents": [{"id": "1", "name": "X"}, {"id": "2", "name": "X"}]}});
        let e = agent_named(&two, "X", "u").unwrap_err().to_string();
        assert_eq!(e, "ElizaOS server at u: 2 agents are named \"X\" (1, 2); set `agent_id` to the UUID of the one to test");
        let e = agent_named(&json!({"agents": []}), "X", "u").unwrap_err();
        assert!(e.to_string().contains("expected the agents list"), "{e}");
    }

    #[test]
    fn a_reply_needs_text_or_actions() {
        let ok = json!({"success": true, "agentResponse": {"text": "Hi.", "actions": ["REPLY"], "thought": "greet"}});
        let r = reply_of_answer(&ok, "u").unwrap();
        assert_eq!(
            (r.content, r.actions, r.thought.as_deref()),
            (json!("Hi."), vec!["REPLY".to_string()], Some("greet"))
        );
        let ignored = json!({"success": true, "agentResponse": {"actions": ["IGNORE"]}});
        assert_eq!(reply_of_answer(&ignored, "u").unwrap().content, json!(""));
        let none = json!({"success": true, "userMessage": {}});
        let e = reply_of_answer(&none, "u").unwrap_err().to_string();
        assert!(
            e.starts_with("ElizaOS agent at u: expected the agent's reply (`agentResponse`"),
            "{e}"
        );
        let empty = json!({"success": true, "agentResponse": {"text": " ", "thought": "hmm"}});
        let e = reply_of_answer(&empty, "u").unwrap_err().to_string();
        assert_eq!(e, "ElizaOS agent at u: expected a reply with `text` or `actions`, got: {\"text\":\" \",\"thought\":\"hmm\"}");
        let failed = json!({"success": false, "error": {"code": "E", "message": "model down"}});
        assert_eq!(
            reply_of_answer(&failed, "u").unwrap_err().to_string(),
            "ElizaOS agent at u: model down"
        );
    }
}
