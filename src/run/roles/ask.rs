//! Asking a role for a JSON answer, with one repair attempt: the one routine every role
//! uses (the built-in judge and simulator on a model, and agents of any kind playing a
//! judge or a simulator).
//!
//! An agent playing a role receives its instructions as messages it can read (a
//! `system` message, then the role's side of the conversation: for a judge, the question
//! as a `user` message; for a simulator, the conversation with the roles swapped), so a
//! model-backed agent (`type = "openai"`) sees them too; agents that speak the seed's
//! contracts find the same input as structured data in the request's `metadata`.

use serde_json::{json, Map, Value};
use tokio::time::Instant;

use crate::agent::Session;
use crate::case::ModelSettings;
use crate::errors::{HelperFault, StepError};
use crate::llm::{Endpoint, ModelCalls};
use crate::protocol::{Message, Request, Role};
use crate::util::compact;

/// What a role is asked.
pub(crate) struct Question {
    /// The role's instructions, sent as a `system` message.
    pub(crate) instructions: String,
    /// What follows the instructions, seen from the role's side: it answers the last
    /// (`user`) message.
    pub(crate) messages: Vec<Message>,
    /// For an agent: the request's `input`, the text the role reacts to.
    pub(crate) input: String,
    /// For an agent: the seed's contract (`test_mode`, ...) as the request's `metadata`.
    pub(crate) metadata: Value,
    /// Said to the role when its answer is unusable.
    pub(crate) repair: String,
    /// What a usable answer has, for the error (`a verdict {passed, reason}`).
    pub(crate) wanted: &'static str,
    /// The answer's JSON schema, sent as the `response_format` of a built-in role in
    /// the form its endpoint's `structured_output` says (see `llm::chat_for_json`),
    /// under the name `schema_name`.
    pub(crate) schema: Value,
    pub(crate) schema_name: &'static str,
    /// The case's model settings for a built-in role.
    pub(crate) model: ModelSettings,
}

/// Who answers: a model endpoint, or an agent's session.
pub(crate) enum Respondent<'a> {
    Model {
        endpoint: &'a Endpoint,
        calls: &'a ModelCalls,
        role: Role,
        deadline: Instant,
    },
    Agent {
        session: &'a mut Session,
        /// The request fields that are not the question: session id, test id, turn, options.
        template: Box<Request>,
    },
}

/// A role's answer, as it came.
pub(crate) struct Answer {
    /// The content (or an agent's `data`): text, or JSON.
    pub(crate) value: Value,
    /// The model stopped at its token limit (`finish_reason: "length"`, or an agent's
    /// `truncated`): the answer is incomplete, whatever it looks like.
    pub(crate) truncated: bool,
}

impl Respondent<'_> {
    /// Whether a model answers (the built-in role, or an `openai` agent playing it).
    pub(crate) fn is_model(&self) -> bool {
        match self {
            Respondent::Model { .. } => true,
            Respondent::Agent { session, .. } => session.is_model(),
        }
    }
}

/// Asks `question`, reads the answer with `read`, and when `read` finds it unusable
/// (saying why) asks once more, saying what was wrong. `who` names the role in errors
/// (`judge`, ``judge `critic` ``). The second unusable answer is an error that shows it:
/// what a model says is data, never a verdict or a user's turn unless it is usable.
pub(crate) async fn ask<T>(
    respondent: &mut Respondent<'_>,
    who: &str,
    question: &Question,
    read: impl Fn(&Answer) -> Result<T, String>,
) -> Result<T, StepError> {
    let mut messages = vec![Message::system(question.instructions.clone())];
    messages.extend(question.messages.iter().cloned());
    let mut answer = Answer {
        value: Value::Null,
        truncated: false,
    };
    let mut why = String::new();
    for attempt in 0..2 {
        let repairing = attempt > 0;
        answer = match respondent {
            Respondent::Model {
                endpoint,
                calls,
                role,
                deadline,
            } => {
                let wire = messages.iter().map(model_message).collect();
                let mut chat = endpoint.request(wire, Vec::new());
                chat.apply(&question.model);
                let schema = (question.schema_name, &question.schema);
                let outcome =
                    crate::llm::chat_for_json(calls, endpoint, *role, chat, schema, *deadline)
                        .await
                        .map_err(|e| StepError::from(e).context(who))?;
                Answer {
                    value: outcome.message()["content"].clone(),
                    truncated: outcome.truncated(),
                }
            }
            Respondent::Agent { session, template } => {
                let mut metadata = question.metadata.clone();
                if repairing {
                    metadata["repair"] = Value::String(question.repair.clone());
                }
                let mut request = (**template).clone();
                request.input = question.input.clone();
                request.messages = messages.clone();
                request.metadata = metadata;
                let reply = session
                    .send(&request)
                    .await
                    .map_err(|e| e.context(who))?
                    .value;
                Answer {
                    value: reply.data.clone().unwrap_or_else(|| reply.content.clone()),
                    truncated: reply.truncated == Some(true),
                }
            }
        };
        match read(&answer) {
            Ok(found) => return Ok(found),
            Err(problem) => why = problem,
        }
        messages.push(Message::assistant(answer.value.clone(), None));
        messages.push(Message::user(format!("{} ({why})", question.repair)));
    }
    Err(StepError::Broken(format!(
        "{who} answered twice without {} ({why}); last answer: {}",
        question.wanted,
        compact(&answer.value)
    )))
}

/// An agent asked outside any case (a generator, a reporter): a session with the agent
/// `name` whose model calls go through `calls`, the request fields that are not the
/// question (`id` is its test id), and the agent's label.
pub(crate) async fn helper_session(
    ctx: &crate::run::context::Context,
    name: &str,
    id: &str,
    calls: std::sync::Arc<ModelCalls>,
    deadline: Instant,
) -> Result<(Session, Box<Request>, String), HelperFault> {
    let (def, label) = ctx.agent(Some(name))?;
    let scope = crate::agent::CaseScope {
        calls,
        mocks: Vec::new(),
        seed: ctx.seed,
        salt: id.to_string(),
        live: false,
        deadline,
        role: Role::Agent,
        trace: Default::default(),
        workdir: None,
        source_llms: None,
        tracer: None,
    };
    let session = def
        .start(&scope)
        .await
        .map_err(|source| HelperFault::Start {
            label: label.clone(),
            source: Box::new(source),
        })?;
    let template = role_request(format!("{id}-{}", std::process::id()), id, 1, json!({}));
    Ok((session, Box::new(template), label))
}

/// The request a role's agent (a simulator, a judge, a generator, a reporter) is asked
/// in: the one construction for them all; [`ask`] fills in the question.
pub(crate) fn role_request(
    session_id: String,
    test_id: &str,
    turn: u32,
    options: Value,
) -> Request {
    Request {
        session_id,
        test_id: test_id.to_string(),
        turn,
        input: String::new(),
        messages: Vec::new(),
        options,
        metadata: Value::Null,
        attachments: Vec::new(),
        setup: None,
    }
}

/// A message as the chat-completions API takes it.
fn model_message(m: &Message) -> Value {
    let mut v = Map::new();
    v.insert("role".into(), json!(m.role));
    v.insert("content".into(), json!(m.text()));
    Value::Object(v)
}
