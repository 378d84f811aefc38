//! Asking a model for JSON that follows a schema, in the strictest form its server takes.
//!
//! Servers differ in the `response_format` they accept: OpenAI, vLLM, Ollama and
//! llama.cpp's server take `json_schema`; llama-cpp-python refuses it and takes
//! `json_object` with a `schema`; some proxies take no `response_format` at all. With
//! `structured_output = "auto"` (the default) the forms are tried strictest first, each
//! refusal moving to the next, and the one accepted is remembered for the endpoint's URL
//! and model for the rest of the process and said once on stderr, and kept in the run
//! store, where the next run starts from it. Other values send their one form.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::time::Instant;

use super::{ChatOutcome, ChatRequest, Endpoint, ModelCalls};
use crate::config::StructuredOutput;
use crate::errors::LlmError;
use crate::protocol::Role;

/// The forms `auto` tries, strictest first.
const AUTO_ORDER: [StructuredOutput; 4] = [
    StructuredOutput::JsonSchema,
    StructuredOutput::JsonObjectSchema,
    StructuredOutput::JsonObject,
    StructuredOutput::Off,
];

/// What the process learned of each endpoint (its URL and model) under `auto`: the form
/// it took. One lock per endpoint, held while the forms are tried, so that cases
/// starting together do not each try them: they wait for the first one's answer.
type Learned = Arc<tokio::sync::Mutex<Option<StructuredOutput>>>;

fn learned(endpoint: &Endpoint) -> Learned {
    static ALL: Mutex<Option<HashMap<(String, String), Learned>>> = Mutex::new(None);
    let mut all = ALL.lock().unwrap_or_else(|e| e.into_inner());
    all.get_or_insert_with(HashMap::new)
        .entry((endpoint.shown().to_string(), endpoint.model().to_string()))
        .or_default()
        .clone()
}

/// Sends `chat` to `endpoint` asking for an answer that follows `schema` (named
/// `name`), in the form its `structured_output` says; under `auto`, in the form the
/// endpoint takes (see the module's documentation). A refusal of every form is the
/// last form's refusal (the request with no `response_format`), which is then about
/// something else than the form.
pub(crate) async fn chat_for_json(
    calls: &ModelCalls,
    endpoint: &Endpoint,
    role: Role,
    mut chat: ChatRequest,
    (name, schema): (&str, &Value),
    deadline: Instant,
) -> Result<ChatOutcome, LlmError> {
    let configured = endpoint.structured_output();
    if configured != StructuredOutput::Auto {
        chat.response_format = Endpoint::response_format(configured, name, schema);
        return calls.chat(endpoint, role, &chat, deadline).await;
    }
    // A cassette answers in the form it was recorded in: the forms before the first one
    // it holds an answer for are not tried (a cassette recorded when `json_object` was
    // the default replays as it was recorded, whatever another case taught the process).
    let mut recorded_from = None;
    for (i, form) in AUTO_ORDER.iter().enumerate() {
        chat.response_format = Endpoint::response_format(*form, name, schema);
        if calls.recorded(role, &chat)? {
            recorded_from = Some(i);
            break;
        }
    }
    let learned = learned(endpoint);
    let (forms, learning): (&[StructuredOutput], Option<Learning<'_>>) = match recorded_from {
        // A replay teaches nothing about the endpoint: no request reached it.
        Some(i) => (&AUTO_ORDER[i..], None),
        None => {
            // The first case to ask tries the forms while the others wait; a probe that
            // ends in another error (an overloaded endpoint) leaves nothing learned,
            // and a case that has waited `PROBE_WAIT` tries the forms itself rather
            // than queue behind it.
            let waited = deadline.min(Instant::now() + PROBE_WAIT);
            match tokio::time::timeout_at(waited, learned.lock()).await {
                Err(_) => (&AUTO_ORDER, None),
                Ok(known) => {
                    if let Some(form) = *known {
                        drop(known);
                        chat.response_format = Endpoint::response_format(form, name, schema);
                        return calls.chat(endpoint, role, &chat, deadline).await;
                    }
                    // What an earlier run learned and the run store kept; a form the
                    // store had that is now refused moves on to the weaker ones.
                    let stored = tokio::time::timeout_at(
                        deadline,
                        crate::record::store::known_form(endpoint.shown(), endpoint.model()),
                    )
                    .await
                    .ok()
                    .flatten()
                    .and_then(|f| AUTO_ORDER.iter().position(|a| a.name() == f));
                    let learning = Learning {
                        known,
                        stored: stored.map(|i| AUTO_ORDER[i]),
                    };
                    (&AUTO_ORDER[stored.unwrap_or(0)..], Some(learning))
                }
            }
        }
    };
    try_forms(
        calls,
        endpoint,
        role,
        chat,
        (name, schema),
        deadline,
        forms,
        learning,
    )
    .await
}

/// How long a case waits for another case's trying of the forms before trying them
/// itself.
const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The endpoint's lock, held while the forms are tried, and the form the run store had.
struct Learning<'a> {
    known: tokio::sync::MutexGuard<'a, Option<StructuredOutput>>,
    stored: Option<StructuredOutput>,
}

/// Tries `forms` in order, moving on at each refusal but the last form's; with
/// `learning`, the form accepted is remembered, said and kept in the run store.
#[expect(
    clippy::too_many_arguments,
    reason = "one call's parts, passed through once"
)]
async fn try_forms(
    calls: &ModelCalls,
    endpoint: &Endpoint,
    role: Role,
    mut chat: ChatRequest,
    (name, schema): (&str, &Value),
    deadline: Instant,
    forms: &[StructuredOutput],
    mut learning: Option<Learning<'_>>,
) -> Result<ChatOutcome, LlmError> {
    let mut refused: Vec<(StructuredOutput, String)> = Vec::new();
    let (last, stricter) = forms.split_last().unwrap_or((&StructuredOutput::Off, &[]));
    for form in stricter.iter().chain([last]) {
        chat.response_format = Endpoint::response_format(*form, name, schema);
        match calls.chat(endpoint, role, &chat, deadline).await {
            Ok(outcome) => {
                if let Some(Learning { known, stored }) = learning.as_mut() {
                    **known = Some(*form);
                    let kept = *stored == Some(*form);
                    say_once(endpoint, *form, &refused, kept);
                    if !kept {
                        crate::record::store::learn_form(
                            endpoint.shown(),
                            endpoint.model(),
                            form.name(),
                        );
                    }
                }
                return Ok(outcome);
            }
            Err(LlmError::Refused(why)) if form != last => refused.push((*form, why)),
            Err(e) => return Err(e),
        }
    }
    Err(LlmError::Failed(format!(
        "{}: no structured-output form was tried",
        endpoint.what()
    )))
}

/// Says on stderr which form `endpoint` takes, and why the stricter ones were not used.
fn say_once(
    endpoint: &Endpoint,
    form: StructuredOutput,
    refused: &[(StructuredOutput, String)],
    kept: bool,
) {
    let why: String = refused
        .iter()
        .map(|(f, why)| format!("; `{}` refused: {}", f.name(), crate::util::scrub(why)))
        .collect();
    let whence = if kept {
        " (as the run store had it from an earlier run)"
    } else {
        ""
    };
    eprintln!(
        "agentest: {} (model `{}`) takes structured output as `{}`{whence}{why}",
        endpoint.what(),
        endpoint.model(),
        form.name()
    );
}
