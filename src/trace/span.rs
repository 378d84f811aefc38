//! A span as the receiver hands it on: one OTLP span, decoded from protobuf or JSON,
//! with its attributes as JSON values, whatever convention wrote them.

use serde_json::{Map, Value};

/// A trace id (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(crate) struct TraceId(pub(crate) [u8; 16]);

/// A span id (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(crate) struct SpanId(pub(crate) [u8; 8]);

impl TraceId {
    /// Lowercase hex, as W3C `traceparent` and OTLP/JSON write it.
    pub(crate) fn hex(&self) -> String {
        hex(&self.0)
    }
}

impl SpanId {
    /// Lowercase hex, as W3C `traceparent` and OTLP/JSON write it.
    pub(crate) fn hex(&self) -> String {
        hex(&self.0)
    }
}

fn hex(bytes: &[u8]) -> String {
    crate::util::ids::hex(bytes)
}

/// What a span says of how it ended (OTLP `Status`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum SpanStatus {
    /// `STATUS_CODE_UNSET`.
    #[default]
    Unset,
    /// `STATUS_CODE_OK`.
    Ok,
    /// `STATUS_CODE_ERROR`, with the status message (empty when none).
    Error(String),
}

/// OTLP `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SpanKind {
    #[default]
    Unspecified,
    Internal,
    Server,
    Client,
    Producer,
    Consumer,
}

/// One span.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Span {
    pub(crate) trace_id: TraceId,
    pub(crate) span_id: SpanId,
    /// `None` for a root span (an empty `parentSpanId`).
    pub(crate) parent_span_id: Option<SpanId>,
    pub(crate) name: String,
    pub(crate) kind: SpanKind,
    /// Unix nanoseconds.
    pub(crate) start_unix_nano: u64,
    /// Unix nanoseconds.
    pub(crate) end_unix_nano: u64,
    pub(crate) status: SpanStatus,
    /// The span's attributes, OTLP `AnyValue`s as JSON: strings, booleans, integers
    /// (`intValue`, a string in OTLP/JSON, read as a number), doubles, arrays
    /// (`arrayValue`), objects (`kvlistValue`), and bytes as lowercase hex.
    pub(crate) attributes: Map<String, Value>,
    /// The resource's `service.name`, when it has one.
    pub(crate) service: Option<String>,
}

impl Span {
    /// An attribute as a string (a string value, or any other value written as JSON).
    pub(crate) fn text(&self, key: &str) -> Option<String> {
        self.attributes.get(key).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// An attribute as an unsigned integer (an integer, or a string holding one).
    pub(crate) fn count(&self, key: &str) -> Option<u64> {
        match self.attributes.get(key)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// How long the span took, in milliseconds.
    pub(crate) fn duration_ms(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano) / 1_000_000
    }
}
