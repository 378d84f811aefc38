//! Traces: an OTLP/HTTP receiver on loopback (`receiver`, decoding in `otlp`), the
//! spans agents send it (`span`), what those spans become (`convention`: tool calls,
//! model usage, a span tree per turn), and the run's side (`tracer`: a trace context per
//! turn, its spans settled and merged into the reply).

mod convention;
mod otlp;
mod receiver;
mod span;
mod tracer;

pub(crate) use span::{SpanId, TraceId};
pub(crate) use tracer::{
    reply_of_answer, report_unmatched, turn_answer, turn_request, Tracer, TurnContext, TurnTrace,
};
