//! The run's side of traces: the settings `[traces]` gives, one W3C trace context per
//! turn, the turn registered with the process's receiver before it is sent, and its
//! spans, once settled, read into what the checks use and merged into the reply.

use std::sync::Arc;
use std::time::Duration;

use super::convention::{self, ReadOptions, Traced};
use super::receiver::{self, Collected, Receiver, ReceiverConfig, TurnHandle, TurnKey};
use super::{SpanId, TraceId};
use crate::config::TracesConfig;
use crate::errors::{RecordedTurnError, TraceSetupError};
use crate::protocol::{Reply, Usage};

/// The quiet period after a reply, unless `[traces] settle` says.
const SETTLE: Duration = Duration::from_millis(300);
/// The longest wait for a turn's spans, unless `[traces] settle_max` says.
const SETTLE_MAX: Duration = Duration::from_secs(5);
/// The batch delay process agents' OpenTelemetry SDKs get (milliseconds): Python's
/// `BatchSpanProcessor` otherwise waits 5 s before it exports.
const BATCH_DELAY_MS: &str = "50";

/// Traces for the agents that have them on: the receiver, and how long to wait.
pub(crate) struct Tracer {
    receiver: Receiver,
    settle: Duration,
    settle_max: Duration,
    read: ReadOptions,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("receiver", &self.receiver)
            .finish_non_exhaustive()
    }
}

impl Tracer {
    /// The tracer of `[traces]`, its receiver the process's (started by the first call,
    /// which says where it listens on stderr).
    pub(crate) fn new(cfg: &TracesConfig) -> Result<Arc<Tracer>, TraceSetupError> {
        // Checked when the config was loaded; the defaults stand in for the impossible.
        let duration = |v: &Option<String>, default| {
            v.as_deref()
                .and_then(|t| crate::util::parse_duration(t).ok())
                .unwrap_or(default)
        };
        let listen = cfg
            .listen
            .as_deref()
            .and_then(|l| l.parse().ok())
            .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let mut config = ReceiverConfig::default();
        if let Some(attributes) = &cfg.session_attributes {
            config.session_attributes = attributes.clone();
        }
        let max_spans = cfg.max_spans.unwrap_or(config.limits.spans_per_turn);
        config.limits.spans_per_turn = max_spans;
        let (receiver, started) = receiver::shared(listen, config)?;
        if started {
            eprintln!(
                "agentest: receiving OpenTelemetry traces (OTLP/HTTP) at http://{}{}",
                receiver.addr(),
                receiver::TRACES_PATH
            );
        }
        Ok(Arc::new(Tracer {
            receiver,
            settle: duration(&cfg.settle, SETTLE),
            settle_max: duration(&cfg.settle_max, SETTLE_MAX),
            read: ReadOptions {
                keep_attributes: cfg.keep_attributes.clone(),
                max_spans,
                ..ReadOptions::default()
            },
        }))
    }

    /// The receiver's traces endpoint.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}{}", self.receiver.addr(), receiver::TRACES_PATH)
    }

    /// The OpenTelemetry variables a process agent gets: where to export, how, a short
    /// batch delay, and the context of the case's first turn (`TRACEPARENT`).
    pub(crate) fn process_env(&self, first: &TurnContext) -> Vec<(String, String)> {
        let base = format!("http://{}", self.receiver.addr());
        [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", base),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", self.endpoint()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_string()),
            ("OTEL_BSP_SCHEDULE_DELAY", BATCH_DELAY_MS.to_string()),
            ("TRACEPARENT", first.traceparent()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Registers a turn under `context` (and the conversation's id, for agents that
    /// name it on their spans rather than propagate the trace).
    pub(crate) fn begin(&self, context: TurnContext, session: Option<String>) -> TurnTrace {
        let handle = self.receiver.expect(TurnKey {
            trace_id: context.trace_id,
            session,
            parent_span_id: Some(context.span_id),
        });
        TurnTrace { handle }
    }

    /// Names the conversation's id learned from the turn's answer (see
    /// [`receiver::TurnHandle::name_session`]).
    pub(crate) fn name_session(&self, turn: &TurnTrace, session: &str) {
        turn.handle.name_session(session);
    }

    /// Waits for the turn's spans to settle and reads them.
    pub(crate) async fn finish(&self, turn: TurnTrace) -> TurnSpans {
        let Collected {
            spans,
            dropped,
            timed_out,
        } = turn.handle.settle(self.settle, self.settle_max).await;
        let traced = convention::read(&spans, &self.read);
        TurnSpans {
            traced,
            dropped,
            timed_out,
        }
    }
}

/// Says on stderr, once at the end of a run, how many spans joined no turn (of a trace
/// agentest did not send, without a session attribute it knows, or late): they are never
/// attached to a case at random.
pub(crate) fn report_unmatched() {
    let Some(receiver) = receiver::running() else {
        return;
    };
    let n = receiver.unmatched();
    if n > 0 {
        eprintln!(
            "agentest: {n} span(s) received matched no turn (another trace, no known session attribute, or after [traces] settle_max) and were left out"
        );
    }
}

/// A turn's W3C trace context: the trace, and the span agentest stands for as its
/// parent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnContext {
    trace_id: TraceId,
    span_id: SpanId,
}

impl TurnContext {
    /// A fresh context.
    pub(crate) fn fresh() -> TurnContext {
        TurnContext {
            trace_id: TraceId(crate::util::ids::fresh()),
            span_id: SpanId(crate::util::ids::fresh()),
        }
    }

    /// `traceparent`: version 00, sampled.
    pub(crate) fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id.hex(), self.span_id.hex())
    }
}

/// A turn registered with the receiver.
#[derive(Debug)]
pub(crate) struct TurnTrace {
    handle: TurnHandle,
}

/// What a turn's spans gave.
#[derive(Debug)]
pub(crate) struct TurnSpans {
    pub(crate) traced: Traced,
    /// Spans over the turn's limits, not kept.
    pub(crate) dropped: u64,
    /// Whether `settle_max` ran out first.
    pub(crate) timed_out: bool,
}

impl TurnSpans {
    /// Adds what the spans say to the reply: the tool calls it does not list already
    /// (by call id, else by name and arguments), marked as traced; the models' tokens as
    /// its usage when it reported none (never added to a usage it reported, which counts
    /// the same tokens); the span tree.
    pub(crate) fn merge_into(self, reply: &mut Reply) {
        for call in &self.traced.tool_calls {
            let listed = reply.tool_calls.iter().any(|c| {
                c.name == call.name && crate::util::json_eq(&c.arguments_json(), &call.arguments)
            });
            if !listed {
                reply.tool_calls.push(call.to_tool_call());
            }
        }
        if reply.usage.is_none() && !self.traced.usage.is_empty() {
            let mut usage = Usage::default();
            for u in &self.traced.usage {
                usage.input_tokens += u.input_tokens;
                usage.output_tokens += u.output_tokens;
            }
            reply.usage = Some(usage);
            reply.usage_traced = true;
        }
        reply.traced = true;
        reply.trace_summary = Some(convention::summary(&self.traced.tree));
        reply.spans = self.traced.tree;
        reply.spans_omitted = self.traced.omitted + self.dropped;
        reply.spans_incomplete = self.timed_out;
    }
}

/// What a cassette holds for a traced agent's turn, keyed by the request it answers: the
/// case, the turn, what the user said and the conversation before it (never the trace
/// context or the session ids, which change from run to run).
pub(crate) fn turn_request(request: &crate::protocol::Request) -> serde_json::Value {
    serde_json::json!({"agent_turn": {
        "test_id": request.test_id,
        "turn": request.turn,
        "input": request.input,
        "messages": request.messages,
    }})
}

/// The recorded answer of a traced turn: the reply with what its spans gave.
pub(crate) fn turn_answer(reply: &Reply) -> serde_json::Value {
    serde_json::json!({
        "reply": reply,
        "spans": reply.spans,
        "spans_omitted": reply.spans_omitted,
        "spans_incomplete": reply.spans_incomplete,
        "usage_traced": reply.usage_traced,
        "trace_summary": reply.trace_summary,
    })
}

/// The reply a recorded traced turn gives back, as it was when recorded.
pub(crate) fn reply_of_answer(answer: serde_json::Value) -> Result<Reply, RecordedTurnError> {
    let read = RecordedTurnError;
    let mut reply: Reply = serde_json::from_value(answer["reply"].clone()).map_err(read)?;
    reply.spans = serde_json::from_value(answer["spans"].clone()).map_err(read)?;
    reply.spans_omitted = answer["spans_omitted"].as_u64().unwrap_or(0);
    reply.spans_incomplete = answer["spans_incomplete"] == true;
    reply.usage_traced = answer["usage_traced"] == true;
    reply.trace_summary = answer["trace_summary"].as_str().map(str::to_string);
    reply.traced = true;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{convention, otlp, span::Span};

    /// Every span of a framework capture (tests/fixtures/otlp-frameworks/NAME): each
    /// body decoded as it was sent, by its headers.
    fn captured(name: &str) -> Vec<Span> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/otlp-frameworks")
            .join(name);
        let mut spans = Vec::new();
        for i in 1.. {
            let Ok(body) = std::fs::read(dir.join(format!("traces-{i}.bin"))) else {
                break;
            };
            let headers: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("traces-{i}.headers.json")))
                    .expect("headers"),
            )
            .expect("headers JSON");
            let header = |name: &str| {
                headers["headers"]
                    .as_object()
                    .and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
                    .and_then(|(_, v)| v.as_str())
                    .map(str::to_string)
            };
            let kind = header("content-type").expect("a content type");
            let encoding = header("content-encoding");
            spans.extend(otlp::decode(&body, &kind, encoding.as_deref()).expect("decodes"));
        }
        assert!(!spans.is_empty(), "no capture in {}", dir.display());
        spans
    }

    /// The spans of one turn of a capture (its trace id from run.json).
    fn turn(name: &str, index: usize) -> convention::Traced {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/otlp-frameworks")
            .join(name);
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).expect("run"))
                .expect("run JSON");
        let trace = run["turns"][index]["trace_id"].as_str().expect("trace id");
        let spans: Vec<Span> = captured(name)
            .into_iter()
            .filter(|s| s.trace_id.hex() == trace)
            .collect();
        convention::read(&spans, &convention::ReadOptions::default())
    }

    fn summary(t: &convention::Traced) -> (Vec<(String, serde_json::Value)>, u64, u64) {
        let calls = t
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        let (input, output) = t.usage.iter().fold((0, 0), |(i, o), u| {
            (i + u.input_tokens, o + u.output_tokens)
        });
        (calls, input, output)
    }

    #[test]
    fn real_framework_captures_give_their_tool_calls_and_the_model_servers_tokens() {
        let paris = serde_json::json!({"city": "Paris"});
        // pydantic-ai 2.68 (GenAI conventions, gzip protobuf): the model served 134/28.
        let t = turn("pydantic-ai", 0);
        assert_eq!(
            summary(&t),
            (
                vec![
                    ("get_weather".to_string(), paris.clone()),
                    ("get_time".to_string(), paris.clone())
                ],
                134,
                28
            )
        );
        assert_eq!(
            t.tool_calls[1].result,
            Some(serde_json::json!("14:05 in Paris"))
        );
        // OpenInference on LangGraph: the arguments joined from the LLM span by call id.
        let t = turn("openinference-langgraph", 0);
        assert_eq!(
            summary(&t),
            (
                vec![
                    ("get_weather".to_string(), paris.clone()),
                    ("get_time".to_string(), paris)
                ],
                134,
                28
            )
        );
        // The process agent (by hand, plain protobuf): its failing tool's error.
        let all = captured("process");
        assert!(all.iter().any(|s| s.name.starts_with("execute_tool")));
    }
}
