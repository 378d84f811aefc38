//! One turn, whatever the conversation: the request, the exchange with the agent, the
//! turn's record and the checks on its reply.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Map, Value};

use crate::agent::Session;
use crate::case::Case;
use crate::check::Latency;
use crate::errors::StepError;
use crate::protocol::{Reply, Request};
use crate::record::{CaseReport, TurnReport};
use crate::run::awaiting;
use crate::run::outcome::Stop;

static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// A conversation id, unique within the process.
pub(crate) fn new_session_id() -> String {
    format!(
        "agentest-{}-{}",
        std::process::id(),
        SESSIONS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Shallow merge of the case's options with a turn's.
pub(crate) fn merged_options(case: Option<&Value>, turn: Option<&Value>) -> Value {
    match (case, turn) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut m = a.clone();
            for (k, v) in b {
                m.insert(k.clone(), v.clone());
            }
            Value::Object(m)
        }
        (_, Some(t)) => t.clone(),
        (Some(c), None) => c.clone(),
        (None, None) => Value::Object(Map::new()),
    }
}

/// The request's `metadata`: the case's, with its `user` and `team`.
pub(crate) fn request_metadata(case: &Case) -> Value {
    let mut m = match case.metadata.as_deref() {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    if let Some(u) = &case.user {
        m.insert("user".into(), Value::clone(u));
    }
    if let Some(t) = &case.team {
        m.insert("team".into(), Value::clone(t));
    }
    Value::Object(m)
}

/// Sends one turn and waits for the reply, timing it; an agent that does not answer
/// leaves a turn record with the error and stops the case with the status the error
/// calls for.
pub(crate) async fn exchange(
    session: &mut Session,
    request: &Request,
    source: &str,
    report: &mut CaseReport,
    phase: &mut String,
) -> Result<(Reply, Latency), Stop> {
    *phase = format!("waiting for the reply to turn {}", request.turn);
    let sent = Instant::now();
    let agent = report.agent.clone().unwrap_or_default();
    let reply =
        crate::run::slow::noting(session.send(request), &report.trial, &agent, request.turn).await;
    let duration_ms = sent.elapsed().as_millis() as u64;
    match reply {
        Ok(r) => {
            let first_token_ms = r.first_byte.map_or(duration_ms, |at| {
                at.saturating_duration_since(sent).as_millis() as u64
            });
            let latency = Latency {
                turn: request.turn,
                // Never above the whole: both are rounded down from one clock.
                first_token_ms: first_token_ms.min(duration_ms),
                reply_ms: duration_ms,
            };
            let mut reply = r.value;
            // The spans the agent exported for the turn (when they are read) join its
            // reply; the time they take to settle is not the agent's reply time.
            *phase = format!("waiting for the spans of turn {}", request.turn);
            session.read_spans(&mut reply).await;
            Ok((reply, latency))
        }
        Err(e) => {
            let turn = request.turn;
            let mut record = failed_turn(turn, request.input.clone(), source, duration_ms, &e);
            // What the agent did before it failed stays in the record.
            if let Some(partial) = session.take_partial() {
                record.tool_calls = partial.tool_calls;
                record.usage = partial.usage;
            }
            report.turns.push(record);
            Err(Stop::step(&format!("turn {turn}"), e))
        }
    }
}

/// The record of a turn the agent answered, with its awaiting-input verdict.
pub(crate) fn replied_turn(
    turn: u32,
    input: &str,
    source: &str,
    reply: &Reply,
    latency: Latency,
    input_tools: &[String],
) -> TurnReport {
    let (awaiting, reason) = awaiting::detect(reply, input_tools);
    TurnReport {
        turn,
        input: input.to_string(),
        input_source: source.into(),
        output: reply.output_value(),
        tool_calls: reply.tool_calls.clone(),
        actions: reply.actions.clone(),
        thought: reply.thought.clone(),
        files: reply.files.clone(),
        spans: reply.spans.clone(),
        spans_note: spans_note(reply),
        usage_traced: reply.usage_traced,
        awaiting_input: awaiting,
        awaiting_reason: Some(reason),
        data: reply.data.clone(),
        duration_ms: latency.reply_ms,
        first_token_ms: Some(latency.first_token_ms),
        usage: reply.usage,
        truncated: reply.truncated == Some(true),
        ..TurnReport::default()
    }
}

/// What the turn record says of spans not kept or not settled.
fn spans_note(reply: &Reply) -> Option<String> {
    let mut notes = Vec::new();
    if reply.spans_omitted > 0 {
        notes.push(format!(
            "{} span(s) not kept (over [traces] max_spans or the size limit)",
            reply.spans_omitted
        ));
    }
    if reply.spans_incomplete {
        notes.push(
            "the spans had not settled when [traces] settle_max ran out; some may be missing"
                .to_string(),
        );
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

/// The record of a turn the agent did not answer.
fn failed_turn(
    turn: u32,
    input: String,
    source: &str,
    duration_ms: u64,
    error: &StepError,
) -> TurnReport {
    TurnReport {
        turn,
        input,
        input_source: source.into(),
        duration_ms,
        error: Some(error.to_string()),
        ..TurnReport::default()
    }
}

/// How long each answered turn of a conversation took, for its final checks.
pub(crate) fn latencies(turns: &[TurnReport]) -> Vec<Latency> {
    turns
        .iter()
        .filter_map(|t| {
            Some(Latency {
                turn: t.turn,
                first_token_ms: t.first_token_ms?,
                reply_ms: t.duration_ms,
            })
        })
        .collect()
}
