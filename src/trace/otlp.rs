//! Decoding OTLP/HTTP trace exports: an `ExportTraceServiceRequest` body, protobuf or
//! OTLP/JSON, gzipped or not, into [`Span`]s.
//!
//! The protobuf messages are written out here with `prost`'s derive, only the fields
//! agentest reads (protobuf skips the others), with the field numbers of
//! opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto` and
//! `trace_service.proto`. The `opentelemetry-proto` crate would bring tonic and its
//! build along for four messages.
//!
//! OTLP/JSON is the proto3 JSON mapping with OTLP's changes: trace and span ids in hex,
//! enums as integers. Read leniently, as the proto3 mapping allows a reader to: field
//! names in lowerCamelCase or as in the `.proto` (snake_case), 64-bit integers as
//! numbers or strings, enums as integers or names, `null` for a field not set; and ids
//! in base64 too (what a generic protobuf JSON printer writes).

use std::borrow::Cow;
use std::io::Read;

use base64::Engine;
use serde_json::{Map, Value};

use super::span::{Span, SpanId, SpanKind, SpanStatus, TraceId};
use crate::errors::{OtlpBytesError, OtlpError};

/// How large a request body may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimits {
    /// The body as sent (compressed or not), in bytes.
    pub(crate) body: usize,
    /// The body once decompressed, in bytes: a small gzip body can expand a thousandfold,
    /// so the decoder's output is cut off here.
    pub(crate) decoded: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            body: 8 << 20,
            decoded: 32 << 20,
        }
    }
}

/// The two encodings of OTLP/HTTP, told by the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names (its parameters, such as a charset, ignored).
    pub(crate) fn from_content_type(content_type: &str) -> Result<Encoding, OtlpError> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/x-protobuf")
            || essence.eq_ignore_ascii_case("application/protobuf")
        {
            Ok(Encoding::Protobuf)
        } else if essence.eq_ignore_ascii_case("application/json") {
            Ok(Encoding::Json)
        } else {
            Err(OtlpError::ContentType(content_type.to_owned()))
        }
    }

    /// The `Content-Type` of a response in this encoding.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// The spans of an `ExportTraceServiceRequest` body, within the default [`BodyLimits`].
#[cfg(test)]
pub(crate) fn decode(
    body: &[u8],
    content_type: &str,
    content_encoding: Option<&str>,
) -> Result<Vec<Span>, OtlpError> {
    decode_limited(body, content_type, content_encoding, BodyLimits::default())
}

/// The spans of an `ExportTraceServiceRequest` body, within `limits`.
pub(crate) fn decode_limited(
    body: &[u8],
    content_type: &str,
    content_encoding: Option<&str>,
    limits: BodyLimits,
) -> Result<Vec<Span>, OtlpError> {
    let encoding = Encoding::from_content_type(content_type)?;
    let raw = decompress(body, content_encoding, limits)?;
    match encoding {
        Encoding::Protobuf => from_protobuf(&raw),
        Encoding::Json => from_json(&raw),
    }
}

/// The body with its `Content-Encoding` undone, within the limits.
fn decompress<'a>(
    body: &'a [u8],
    content_encoding: Option<&str>,
    limits: BodyLimits,
) -> Result<Cow<'a, [u8]>, OtlpError> {
    if body.len() > limits.body {
        return Err(OtlpError::TooLarge {
            what: "request body",
            limit: limits.body,
        });
    }
    match content_encoding.map(str::trim).unwrap_or("") {
        "" => {}
        e if e.eq_ignore_ascii_case("identity") => {}
        e if e.eq_ignore_ascii_case("gzip") || e.eq_ignore_ascii_case("x-gzip") => {
            return gunzip(body, limits.decoded).map(Cow::Owned);
        }
        other => return Err(OtlpError::ContentEncoding(other.to_owned())),
    }
    if body.len() > limits.decoded {
        return Err(OtlpError::TooLarge {
            what: "request body",
            limit: limits.decoded,
        });
    }
    Ok(Cow::Borrowed(body))
}

/// A gzip body, decompressed: at most `limit` bytes are read out of the decoder, so a
/// gzip bomb costs `limit` bytes of memory and is refused.
fn gunzip(body: &[u8], limit: usize) -> Result<Vec<u8>, OtlpError> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
    // Multi: a gzip file may be several members one after another.
    flate2::read::MultiGzDecoder::new(body)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(OtlpError::Gzip)?;
    if out.len() > limit {
        return Err(OtlpError::TooLarge {
            what: "decompressed request body",
            limit,
        });
    }
    Ok(out)
}

/// The protobuf messages, only the fields read (field numbers from opentelemetry-proto).
mod pb {
    /// `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ExportTraceServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub(super) resource_spans: Vec<ResourceSpans>,
    }

    /// `opentelemetry.proto.trace.v1.ResourceSpans`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ResourceSpans {
        #[prost(message, optional, tag = "1")]
        pub(super) resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub(super) scope_spans: Vec<ScopeSpans>,
    }

    /// `opentelemetry.proto.resource.v1.Resource`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub(super) attributes: Vec<KeyValue>,
    }

    /// `opentelemetry.proto.trace.v1.ScopeSpans`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ScopeSpans {
        #[prost(message, repeated, tag = "2")]
        pub(super) spans: Vec<Span>,
    }

    /// `opentelemetry.proto.trace.v1.Span`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Span {
        #[prost(bytes = "vec", tag = "1")]
        pub(super) trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub(super) span_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "4")]
        pub(super) parent_span_id: Vec<u8>,
        #[prost(string, tag = "5")]
        pub(super) name: String,
        /// `SpanKind`: an open enum, so read as its integer.
        #[prost(int32, tag = "6")]
        pub(super) kind: i32,
        #[prost(fixed64, tag = "7")]
        pub(super) start_time_unix_nano: u64,
        #[prost(fixed64, tag = "8")]
        pub(super) end_time_unix_nano: u64,
        #[prost(message, repeated, tag = "9")]
        pub(super) attributes: Vec<KeyValue>,
        #[prost(message, optional, tag = "15")]
        pub(super) status: Option<Status>,
    }

    /// `opentelemetry.proto.trace.v1.Status` (field 1 is reserved).
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct Status {
        #[prost(string, tag = "2")]
        pub(super) message: String,
        #[prost(int32, tag = "3")]
        pub(super) code: i32,
    }

    /// `opentelemetry.proto.common.v1.KeyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct KeyValue {
        #[prost(string, tag = "1")]
        pub(super) key: String,
        #[prost(message, optional, tag = "2")]
        pub(super) value: Option<AnyValue>,
    }

    /// `opentelemetry.proto.common.v1.AnyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct AnyValue {
        #[prost(oneof = "Value", tags = "1, 2, 3, 4, 5, 6, 7")]
        pub(super) value: Option<Value>,
    }

    /// `AnyValue`'s `oneof value` (`string_value_strindex`, 8, is for profiles only).
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub(super) enum Value {
        #[prost(string, tag = "1")]
        String(String),
        #[prost(bool, tag = "2")]
        Bool(bool),
        #[prost(int64, tag = "3")]
        Int(i64),
        #[prost(double, tag = "4")]
        Double(f64),
        #[prost(message, tag = "5")]
        Array(ArrayValue),
        #[prost(message, tag = "6")]
        Kvlist(KeyValueList),
        #[prost(bytes = "vec", tag = "7")]
        Bytes(Vec<u8>),
    }

    /// `opentelemetry.proto.common.v1.ArrayValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ArrayValue {
        #[prost(message, repeated, tag = "1")]
        pub(super) values: Vec<AnyValue>,
    }

    /// `opentelemetry.proto.common.v1.KeyValueList`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct KeyValueList {
        #[prost(message, repeated, tag = "1")]
        pub(super) values: Vec<KeyValue>,
    }

    /// `google.rpc.Status`: the body of an OTLP/HTTP error response.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct RpcStatus {
        #[prost(string, tag = "2")]
        pub(super) message: String,
    }
}

/// Where a span is in the request, to name it in an error.
#[derive(Clone, Copy)]
struct At {
    resource: usize,
    scope: usize,
    span: usize,
}

impl At {
    fn error(self, field: &'static str, problem: impl Into<String>) -> OtlpError {
        OtlpError::Span {
            resource: self.resource,
            scope: self.scope,
            span: self.span,
            field,
            problem: problem.into(),
        }
    }
}

fn from_protobuf(bytes: &[u8]) -> Result<Vec<Span>, OtlpError> {
    use prost::Message;
    // prost refuses messages nested deeper than 100, so a hostile body cannot overflow
    // the stack here or in `pb_value` below.
    let request = pb::ExportTraceServiceRequest::decode(bytes).map_err(OtlpError::Protobuf)?;
    let mut spans = Vec::new();
    for (resource, rs) in request.resource_spans.into_iter().enumerate() {
        let service = rs
            .resource
            .as_ref()
            .and_then(|r| {
                r.attributes
                    .iter()
                    .rev()
                    .find(|kv| kv.key == "service.name")
            })
            .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                pb::Value::String(s) => Some(s.clone()),
                _ => None,
            });
        for (scope, ss) in rs.scope_spans.into_iter().enumerate() {
            for (span, s) in ss.spans.into_iter().enumerate() {
                let at = At {
                    resource,
                    scope,
                    span,
                };
                let mut attributes = Map::new();
                for kv in s.attributes {
                    attributes.insert(kv.key, kv.value.map_or(Value::Null, pb_value));
                }
                let status = s.status.unwrap_or_default();
                spans.push(Span {
                    trace_id: TraceId(
                        fixed(&s.trace_id)
                            .ok_or_else(|| at.error("traceId", length(&s.trace_id, 16)))?,
                    ),
                    span_id: SpanId(
                        fixed(&s.span_id)
                            .ok_or_else(|| at.error("spanId", length(&s.span_id, 8)))?,
                    ),
                    parent_span_id: parent(
                        fixed(&s.parent_span_id)
                            .or_else(|| s.parent_span_id.is_empty().then_some([0; 8]))
                            .ok_or_else(|| {
                                at.error("parentSpanId", length(&s.parent_span_id, 8))
                            })?,
                    ),
                    name: s.name,
                    kind: kind(i64::from(s.kind)),
                    start_unix_nano: s.start_time_unix_nano,
                    end_unix_nano: s.end_time_unix_nano,
                    status: status_of(i64::from(status.code), status.message),
                    attributes,
                    service: service.clone(),
                });
            }
        }
    }
    Ok(spans)
}

/// The bytes as an id of `N` bytes, when they are that long.
fn fixed<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    bytes.try_into().ok()
}

fn length(bytes: &[u8], want: usize) -> String {
    format!("{} bytes, not {want}", bytes.len())
}

/// No parent for an empty or all-zero parent id (both mean a root span).
fn parent(id: [u8; 8]) -> Option<SpanId> {
    (id != [0; 8]).then_some(SpanId(id))
}

/// `SpanKind` from its number; one this version does not know is `Unspecified`
/// (protobuf enums are open).
fn kind(n: i64) -> SpanKind {
    match n {
        1 => SpanKind::Internal,
        2 => SpanKind::Server,
        3 => SpanKind::Client,
        4 => SpanKind::Producer,
        5 => SpanKind::Consumer,
        _ => SpanKind::Unspecified,
    }
}

fn status_of(code: i64, message: String) -> SpanStatus {
    match code {
        1 => SpanStatus::Ok,
        2 => SpanStatus::Error(message),
        _ => SpanStatus::Unset,
    }
}

/// An `AnyValue` as JSON, as [`Span::attributes`] documents.
fn pb_value(v: pb::AnyValue) -> Value {
    match v.value {
        None => Value::Null,
        Some(pb::Value::String(s)) => Value::String(s),
        Some(pb::Value::Bool(b)) => Value::Bool(b),
        Some(pb::Value::Int(i)) => Value::from(i),
        Some(pb::Value::Double(d)) => double(d),
        Some(pb::Value::Array(a)) => Value::Array(a.values.into_iter().map(pb_value).collect()),
        Some(pb::Value::Kvlist(kv)) => Value::Object(
            kv.values
                .into_iter()
                .map(|kv| (kv.key, kv.value.map_or(Value::Null, pb_value)))
                .collect(),
        ),
        Some(pb::Value::Bytes(b)) => Value::String(hex(&b)),
    }
}

/// A double as JSON: a number, or for NaN and the infinities (which JSON numbers
/// cannot hold) the string the proto3 JSON mapping writes for them.
fn double(d: f64) -> Value {
    serde_json::Number::from_f64(d).map_or_else(
        || {
            Value::String(
                if d.is_nan() {
                    "NaN"
                } else if d > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                }
                .into(),
            )
        },
        Value::Number,
    )
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The body of an OTLP/HTTP error response (`google.rpc.Status` with its message), in
/// the request's encoding.
pub(crate) fn error_body(encoding: Encoding, message: &str) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => prost::Message::encode_to_vec(&pb::RpcStatus {
            message: message.to_owned(),
        }),
        Encoding::Json => serde_json::json!({ "message": message })
            .to_string()
            .into_bytes(),
    }
}

/// The body of a successful response: an empty `ExportTraceServiceResponse` (no
/// `partial_success`), in the request's encoding.
pub(crate) fn success_body(encoding: Encoding) -> &'static [u8] {
    match encoding {
        // Every field unset: zero bytes.
        Encoding::Protobuf => b"",
        Encoding::Json => b"{}",
    }
}

/// OTLP/JSON, read with serde. Every field is optional (`null` or absent is the
/// field's default), and each has its `.proto` name as an alias.
mod json {
    use serde::de::{self, Deserializer, Visitor};
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Request {
        #[serde(default, alias = "resource_spans")]
        pub(super) resource_spans: Option<Vec<ResourceSpans>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct ResourceSpans {
        #[serde(default)]
        pub(super) resource: Option<Resource>,
        #[serde(default, alias = "scope_spans")]
        pub(super) scope_spans: Option<Vec<ScopeSpans>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Resource {
        #[serde(default)]
        pub(super) attributes: Option<Vec<KeyValue>>,
    }

    #[derive(Deserialize)]
    pub(super) struct ScopeSpans {
        #[serde(default)]
        pub(super) spans: Option<Vec<Span>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Span {
        #[serde(default, alias = "trace_id")]
        pub(super) trace_id: Option<String>,
        #[serde(default, alias = "span_id")]
        pub(super) span_id: Option<String>,
        #[serde(default, alias = "parent_span_id")]
        pub(super) parent_span_id: Option<String>,
        #[serde(default)]
        pub(super) name: Option<String>,
        #[serde(default)]
        pub(super) kind: Option<Enum>,
        #[serde(default, alias = "start_time_unix_nano")]
        pub(super) start_time_unix_nano: Option<Int<u64>>,
        #[serde(default, alias = "end_time_unix_nano")]
        pub(super) end_time_unix_nano: Option<Int<u64>>,
        #[serde(default)]
        pub(super) attributes: Option<Vec<KeyValue>>,
        #[serde(default)]
        pub(super) status: Option<Status>,
    }

    #[derive(Deserialize)]
    pub(super) struct Status {
        #[serde(default)]
        pub(super) message: Option<String>,
        #[serde(default)]
        pub(super) code: Option<Enum>,
    }

    #[derive(Deserialize)]
    pub(super) struct KeyValue {
        #[serde(default)]
        pub(super) key: Option<String>,
        #[serde(default)]
        pub(super) value: Option<AnyValue>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct AnyValue {
        #[serde(default, alias = "string_value")]
        pub(super) string_value: Option<String>,
        #[serde(default, alias = "bool_value")]
        pub(super) bool_value: Option<bool>,
        #[serde(default, alias = "int_value")]
        pub(super) int_value: Option<Int<i64>>,
        #[serde(default, alias = "double_value")]
        pub(super) double_value: Option<Double>,
        #[serde(default, alias = "array_value")]
        pub(super) array_value: Option<Values<AnyValue>>,
        #[serde(default, alias = "kvlist_value")]
        pub(super) kvlist_value: Option<Values<KeyValue>>,
        #[serde(default, alias = "bytes_value")]
        pub(super) bytes_value: Option<String>,
    }

    /// `ArrayValue` and `KeyValueList`: `{"values": [...]}`.
    #[derive(Deserialize)]
    pub(super) struct Values<T> {
        #[serde(default = "Option::default")]
        pub(super) values: Option<Vec<T>>,
    }

    /// A 64-bit integer: a JSON number, or a string holding one (as proto3 JSON
    /// writes 64-bit integers).
    pub(super) struct Int<T>(pub(super) T);

    impl<'de, T> Deserialize<'de> for Int<T>
    where
        T: TryFrom<i64> + TryFrom<u64> + std::str::FromStr,
    {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<T>(std::marker::PhantomData<T>);
            impl<T> V<T>
            where
                T: TryFrom<i64> + TryFrom<u64> + std::str::FromStr,
            {
                fn range<E: de::Error>(n: impl std::fmt::Display) -> E {
                    E::custom(format_args!("the integer {n} is out of range"))
                }
            }
            impl<T> Visitor<'_> for V<T>
            where
                T: TryFrom<i64> + TryFrom<u64> + std::str::FromStr,
            {
                type Value = Int<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an integer, or a string holding one")
                }
                fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                    T::try_from(n).map(Int).map_err(|_| Self::range(n))
                }
                fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                    T::try_from(n).map(Int).map_err(|_| Self::range(n))
                }
                fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
                    // `1e3` is an integer written as a float; `1.5` is not one.
                    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                        // Integral and within 2^53, so exact.
                        return self.visit_i64(n as i64);
                    }
                    Err(E::invalid_value(de::Unexpected::Float(n), &self))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                    s.trim()
                        .parse()
                        .map(Int)
                        .map_err(|_| E::invalid_value(de::Unexpected::Str(s), &self))
                }
            }
            d.deserialize_any(V(std::marker::PhantomData))
        }
    }

    /// A double: a JSON number, or a string (`"NaN"`, `"Infinity"`, `"-Infinity"`, or
    /// a number written as a string), as the proto3 JSON mapping allows.
    pub(super) struct Double(pub(super) f64);

    impl<'de> Deserialize<'de> for Double {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Double;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a number, or a string holding one")
                }
                fn visit_i64<E: de::Error>(self, n: i64) -> Result<Double, E> {
                    Ok(Double(n as f64))
                }
                fn visit_u64<E: de::Error>(self, n: u64) -> Result<Double, E> {
                    Ok(Double(n as f64))
                }
                fn visit_f64<E: de::Error>(self, n: f64) -> Result<Double, E> {
                    Ok(Double(n))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Double, E> {
                    match s.trim() {
                        "NaN" => Ok(Double(f64::NAN)),
                        "Infinity" => Ok(Double(f64::INFINITY)),
                        "-Infinity" => Ok(Double(f64::NEG_INFINITY)),
                        t => t
                            .parse()
                            .map(Double)
                            .map_err(|_| E::invalid_value(de::Unexpected::Str(s), &self)),
                    }
                }
            }
            d.deserialize_any(V)
        }
    }

    /// An enum: its number (as OTLP/JSON writes it) or its name (as the proto3 JSON
    /// mapping allows).
    pub(super) enum Enum {
        Number(i64),
        Name(String),
    }

    impl<'de> Deserialize<'de> for Enum {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Enum;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an enum's number or name")
                }
                fn visit_i64<E: de::Error>(self, n: i64) -> Result<Enum, E> {
                    Ok(Enum::Number(n))
                }
                fn visit_u64<E: de::Error>(self, n: u64) -> Result<Enum, E> {
                    // Too large to be any enum's number: read as an unknown value.
                    Ok(Enum::Number(i64::try_from(n).unwrap_or(-1)))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Enum, E> {
                    Ok(Enum::Name(s.to_owned()))
                }
            }
            d.deserialize_any(V)
        }
    }
}

fn from_json(bytes: &[u8]) -> Result<Vec<Span>, OtlpError> {
    // serde_json refuses nesting deeper than 128, so a hostile body cannot overflow the
    // stack here or in `json_value` below.
    let request: json::Request = serde_json::from_slice(bytes).map_err(OtlpError::Json)?;
    let mut spans = Vec::new();
    for (resource, rs) in request
        .resource_spans
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let service = rs
            .resource
            .and_then(|r| r.attributes)
            .unwrap_or_default()
            .into_iter()
            .rev()
            .find(|kv| kv.key.as_deref() == Some("service.name"))
            .and_then(|kv| kv.value?.string_value);
        for (scope, ss) in rs.scope_spans.unwrap_or_default().into_iter().enumerate() {
            for (span, s) in ss.spans.unwrap_or_default().into_iter().enumerate() {
                let at = At {
                    resource,
                    scope,
                    span,
                };
                spans.push(json_span(s, at, service.clone())?);
            }
        }
    }
    Ok(spans)
}

fn json_span(s: json::Span, at: At, service: Option<String>) -> Result<Span, OtlpError> {
    let trace_id = match id::<16>(s.trace_id.as_deref().unwrap_or("")) {
        Some(id) => TraceId(id),
        None => return Err(at.error("traceId", bad_id(s.trace_id.as_deref(), 16))),
    };
    let span_id = match id::<8>(s.span_id.as_deref().unwrap_or("")) {
        Some(id) => SpanId(id),
        None => return Err(at.error("spanId", bad_id(s.span_id.as_deref(), 8))),
    };
    let parent_span_id = match s.parent_span_id.as_deref().unwrap_or("") {
        "" => None,
        text => match id::<8>(text) {
            Some(id) => parent(id),
            None => return Err(at.error("parentSpanId", bad_id(Some(text), 8))),
        },
    };
    let kind = match s.kind {
        None => SpanKind::Unspecified,
        Some(json::Enum::Number(n)) => kind(n),
        Some(json::Enum::Name(name)) => match name.as_str() {
            "SPAN_KIND_UNSPECIFIED" => SpanKind::Unspecified,
            "SPAN_KIND_INTERNAL" => SpanKind::Internal,
            "SPAN_KIND_SERVER" => SpanKind::Server,
            "SPAN_KIND_CLIENT" => SpanKind::Client,
            "SPAN_KIND_PRODUCER" => SpanKind::Producer,
            "SPAN_KIND_CONSUMER" => SpanKind::Consumer,
            _ => return Err(at.error("kind", format!("`{name}` is not a SpanKind"))),
        },
    };
    let status = match s.status {
        None => SpanStatus::Unset,
        Some(status) => {
            let message = status.message.unwrap_or_default();
            match status.code {
                None => SpanStatus::Unset,
                Some(json::Enum::Number(n)) => status_of(n, message),
                Some(json::Enum::Name(name)) => match name.as_str() {
                    "STATUS_CODE_UNSET" => SpanStatus::Unset,
                    "STATUS_CODE_OK" => SpanStatus::Ok,
                    "STATUS_CODE_ERROR" => SpanStatus::Error(message),
                    _ => {
                        return Err(at.error("status.code", format!("`{name}` is not a StatusCode")))
                    }
                },
            }
        }
    };
    let mut attributes = Map::new();
    for kv in s.attributes.unwrap_or_default() {
        let key = kv.key.unwrap_or_default();
        let value = match kv.value {
            None => Value::Null,
            Some(v) => {
                json_value(v).map_err(|p| at.error("attributes", format!("`{key}`: {p}")))?
            }
        };
        attributes.insert(key, value);
    }
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id,
        name: s.name.unwrap_or_default(),
        kind,
        start_unix_nano: s.start_time_unix_nano.map_or(0, |n| n.0),
        end_unix_nano: s.end_time_unix_nano.map_or(0, |n| n.0),
        status,
        attributes,
        service,
    })
}

/// An id of `N` bytes: hex (OTLP/JSON, any case) or base64 (what a generic protobuf
/// JSON printer writes); the two cannot be confused, being of different lengths.
fn id<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.trim();
    if text.len() == 2 * N {
        // By hand: `u8::from_str_radix` would take a sign (`+f`) as part of a number.
        fn digit(c: u8) -> Option<u8> {
            (c as char).to_digit(16).map(|d| d as u8)
        }
        let mut out = [0u8; N];
        for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            *byte = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        return Some(out);
    }
    base64_bytes(text).ok()?.try_into().ok()
}

fn bad_id(text: Option<&str>, bytes: usize) -> String {
    match text {
        None | Some("") => format!("missing (an id of {bytes} bytes, {} hex digits)", bytes * 2),
        Some(t) => format!(
            "`{}` is not an id of {bytes} bytes ({} hex digits)",
            clip(t),
            bytes * 2
        ),
    }
}

/// At most 64 characters of what a sender wrote, for a message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// base64, standard or URL-safe alphabet, padded or not: the proto3 JSON mapping's
/// `bytes`, which a reader accepts in all four forms.
fn base64_bytes(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::alphabet;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const CONFIG: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    let engine = if text.contains(['-', '_']) {
        &URL_SAFE
    } else {
        &STANDARD
    };
    engine.decode(text)
}

/// A JSON `AnyValue` as JSON, as [`Span::attributes`] documents; the first field set
/// wins, an `AnyValue` with none is `null`.
fn json_value(v: json::AnyValue) -> Result<Value, OtlpBytesError> {
    if let Some(s) = v.string_value {
        return Ok(Value::String(s));
    }
    if let Some(b) = v.bool_value {
        return Ok(Value::Bool(b));
    }
    if let Some(i) = v.int_value {
        return Ok(Value::from(i.0));
    }
    if let Some(d) = v.double_value {
        return Ok(double(d.0));
    }
    if let Some(a) = v.array_value {
        return a
            .values
            .unwrap_or_default()
            .into_iter()
            .map(json_value)
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Some(kv) = v.kvlist_value {
        let mut map = Map::new();
        for kv in kv.values.unwrap_or_default() {
            let value = match kv.value {
                None => Value::Null,
                Some(v) => json_value(v)?,
            };
            map.insert(kv.key.unwrap_or_default(), value);
        }
        return Ok(Value::Object(map));
    }
    if let Some(b) = v.bytes_value {
        return base64_bytes(&b)
            .map(|bytes| Value::String(hex(&bytes)))
            .map_err(|source| OtlpBytesError {
                shown: clip(&b),
                source,
            });
    }
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fixture made by a real exporter (tests/fixtures/otlp/README.md): its body and
    /// the content headers it was sent with.
    struct Fixture {
        body: Vec<u8>,
        content_type: String,
        content_encoding: Option<String>,
    }

    fn fixture(name: &str) -> Fixture {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/otlp/");
        let body = std::fs::read(format!("{dir}{name}.body")).unwrap();
        let headers: Value =
            serde_json::from_slice(&std::fs::read(format!("{dir}{name}.headers.json")).unwrap())
                .unwrap();
        Fixture {
            body,
            content_type: headers["content-type"].as_str().unwrap().to_owned(),
            content_encoding: headers["content-encoding"].as_str().map(str::to_owned),
        }
    }

    fn decode_fixture(name: &str) -> Result<Vec<Span>, OtlpError> {
        let f = fixture(name);
        decode(&f.body, &f.content_type, f.content_encoding.as_deref())
    }

    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    /// What tests/fixtures/otlp/export_python.py exports, in the order the SDK sends
    /// it (by end time: the tool, the model call, the root).
    fn assert_python_trace(spans: &[Span]) {
        assert_eq!(spans.len(), 3, "{spans:#?}");
        for s in spans {
            assert_eq!(s.trace_id.hex(), "0af7651916cd43dd8448eb211c80319c");
            assert_eq!(s.service.as_deref(), Some("fixture-python-agent"));
        }
        let (tool, chat, root) = (&spans[0], &spans[1], &spans[2]);

        assert_eq!(root.span_id.hex(), "b7ad6b7169203331");
        assert_eq!(root.parent_span_id, None);
        assert_eq!(root.name, "invoke_agent fixture");
        assert_eq!(root.kind, SpanKind::Server);
        assert_eq!(
            (root.start_unix_nano, root.end_unix_nano),
            (T0, T0 + 50 * MS)
        );
        assert_eq!(root.duration_ms(), 50);
        assert_eq!(root.status, SpanStatus::Ok);
        assert_eq!(
            Value::Object(root.attributes.clone()),
            json!({"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-1"})
        );

        assert_eq!(tool.span_id.hex(), "00f067aa0ba902b7");
        assert_eq!(tool.parent_span_id, Some(root.span_id));
        assert_eq!(tool.name, "execute_tool lookup");
        assert_eq!(tool.kind, SpanKind::Internal);
        assert_eq!(
            (tool.start_unix_nano, tool.end_unix_nano),
            (T0 + 5 * MS, T0 + 15 * MS)
        );
        assert_eq!(
            tool.status,
            SpanStatus::Error("lookup failed: no such key".into())
        );
        // Every kind of AnyValue: bytes as hex, the int above 2^53 exact.
        assert_eq!(
            Value::Object(tool.attributes.clone()),
            json!({
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "attr.string": "héllo \"quoted\"",
                "attr.bool": true,
                "attr.int": 42,
                "attr.negative": -7,
                "attr.big": 9_007_199_254_740_993_i64,
                "attr.double": 3.25,
                "attr.bytes": "0001feff",
                "attr.array": ["a", 1, true, 2.5],
                "attr.map": {"k": "v", "n": 1, "nested": {"xs": [1, 2]}},
            })
        );
        assert_eq!(
            tool.attributes["attr.big"].as_i64(),
            Some(9_007_199_254_740_993)
        );
        assert_eq!(tool.text("gen_ai.tool.name").as_deref(), Some("lookup"));
        assert_eq!(tool.text("attr.int").as_deref(), Some("42"));

        assert_eq!(chat.span_id.hex(), "53995c3f42cd8ad8");
        assert_eq!(chat.parent_span_id, Some(root.span_id));
        assert_eq!(chat.name, "chat test-model");
        assert_eq!(chat.kind, SpanKind::Client);
        assert_eq!(chat.status, SpanStatus::Unset);
        assert_eq!(chat.count("gen_ai.usage.input_tokens"), Some(12));
        assert_eq!(chat.count("gen_ai.usage.output_tokens"), Some(3));
        assert_eq!(chat.duration_ms(), 20);
    }

    /// What tests/fixtures/otlp/export_node.mjs exports: the child, then the root.
    fn assert_node_trace(spans: &[Span]) {
        assert_eq!(spans.len(), 2, "{spans:#?}");
        let (child, root) = (&spans[0], &spans[1]);
        for s in spans {
            assert_eq!(s.trace_id.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
            assert_eq!(s.service.as_deref(), Some("fixture-node-agent"));
        }
        assert_eq!(root.span_id.hex(), "1f2e3d4c5b6a7988");
        assert_eq!(root.parent_span_id, None);
        assert_eq!(root.name, "POST /agent");
        assert_eq!(root.kind, SpanKind::Server);
        assert_eq!(
            (root.start_unix_nano, root.end_unix_nano),
            (1_700_000_001_000_000_000, 1_700_000_001_030_000_000)
        );
        assert_eq!(root.status, SpanStatus::Unset);
        assert_eq!(
            Value::Object(root.attributes.clone()),
            json!({"session.id": "sess-42", "http.response.status_code": 200})
        );

        assert_eq!(child.span_id.hex(), "a1b2c3d4e5f60718");
        assert_eq!(child.parent_span_id, Some(root.span_id));
        assert_eq!(child.name, "execute_tool search");
        assert_eq!(child.kind, SpanKind::Internal);
        assert_eq!(
            (child.start_unix_nano, child.end_unix_nano),
            (1_700_000_001_002_000_000, 1_700_000_001_009_000_000)
        );
        assert_eq!(child.status, SpanStatus::Error("search timed out".into()));
        assert_eq!(
            Value::Object(child.attributes.clone()),
            json!({
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": "{\"q\":\"rust\"}",
                "attr.int": 7,
                "attr.double": 0.5,
                "attr.bool": false,
                "attr.strings": ["x", "y"],
            })
        );
    }

    #[test]
    fn the_python_exporters_protobuf_is_read() {
        let f = fixture("python-protobuf");
        assert_eq!(f.content_type, "application/x-protobuf");
        assert_eq!(f.content_encoding, None);
        assert_python_trace(&decode_fixture("python-protobuf").unwrap());
    }

    #[test]
    fn the_python_exporters_gzipped_protobuf_is_read() {
        let f = fixture("python-protobuf-gzip");
        assert_eq!(f.content_encoding.as_deref(), Some("gzip"));
        let spans = decode_fixture("python-protobuf-gzip").unwrap();
        assert_python_trace(&spans);
        assert_eq!(spans, decode_fixture("python-protobuf").unwrap());
    }

    #[test]
    fn the_node_exporters_json_is_read() {
        assert_eq!(fixture("node-json").content_type, "application/json");
        assert_node_trace(&decode_fixture("node-json").unwrap());
    }

    #[test]
    fn the_node_exporters_gzipped_json_is_read() {
        assert_eq!(
            fixture("node-json-gzip").content_encoding.as_deref(),
            Some("gzip")
        );
        let spans = decode_fixture("node-json-gzip").unwrap();
        assert_node_trace(&spans);
        assert_eq!(spans, decode_fixture("node-json").unwrap());
    }

    #[test]
    fn content_types_and_encodings_are_matched_loosely() {
        let f = fixture("node-json");
        let spans = decode(&f.body, "Application/JSON; charset=utf-8", Some("identity")).unwrap();
        assert_node_trace(&spans);
        let f = fixture("python-protobuf-gzip");
        assert_python_trace(&decode(&f.body, "application/protobuf", Some(" GZIP ")).unwrap());
        assert_eq!(Encoding::Json.content_type(), "application/json");
        assert_eq!(Encoding::Protobuf.content_type(), "application/x-protobuf");
    }

    #[test]
    fn a_body_that_is_not_gzip_is_refused() {
        let f = fixture("python-protobuf");
        let e = decode(&f.body, &f.content_type, Some("gzip")).unwrap_err();
        assert!(matches!(e, OtlpError::Gzip(_)), "{e:?}");
        assert!(
            e.to_string().starts_with("the body is not valid gzip: "),
            "{e}"
        );
        assert_eq!(e.kind(), "gzip");
    }

    #[test]
    fn a_gzip_body_cut_short_is_refused() {
        let f = fixture("python-protobuf-gzip");
        let cut = &f.body[..f.body.len() / 2];
        let e = decode(cut, &f.content_type, Some("gzip")).unwrap_err();
        assert!(matches!(e, OtlpError::Gzip(_)), "{e:?}");
    }

    #[test]
    fn a_truncated_protobuf_is_refused_naming_the_message() {
        let f = fixture("python-protobuf");
        let cut = &f.body[..f.body.len() - 7];
        let e = decode(cut, &f.content_type, None).unwrap_err();
        assert!(matches!(e, OtlpError::Protobuf(_)), "{e:?}");
        let message = e.to_string();
        assert!(
            message.starts_with("the body is not a protobuf ExportTraceServiceRequest: "),
            "{message}"
        );
        assert_eq!(e.kind(), "protobuf");
    }

    #[test]
    fn a_protobuf_id_of_the_wrong_length_is_refused() {
        use prost::Message;
        let request = pb::ExportTraceServiceRequest {
            resource_spans: vec![pb::ResourceSpans {
                resource: None,
                scope_spans: vec![pb::ScopeSpans {
                    spans: vec![pb::Span {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 5],
                        ..Default::default()
                    }],
                }],
            }],
        };
        let e = decode(&request.encode_to_vec(), "application/x-protobuf", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resourceSpans[0].scopeSpans[0].spans[0].spanId: 5 bytes, not 8"
        );
        assert_eq!(e.kind(), "span");
    }

    #[test]
    fn another_content_type_or_encoding_is_refused() {
        let e = decode(b"{}", "text/plain", None).unwrap_err();
        assert!(
            matches!(e, OtlpError::ContentType(ref t) if t == "text/plain"),
            "{e:?}"
        );
        assert!(e.to_string().contains("application/x-protobuf"), "{e}");
        assert_eq!(e.kind(), "content type");
        let e = decode(b"{}", "application/json", Some("br")).unwrap_err();
        assert!(
            matches!(e, OtlpError::ContentEncoding(ref t) if t == "br"),
            "{e:?}"
        );
        assert_eq!(e.kind(), "content encoding");
    }

    #[test]
    fn an_oversized_body_is_refused() {
        let limits = BodyLimits {
            body: 100,
            decoded: 1_000,
        };
        let e = decode_limited(&[0; 101], "application/x-protobuf", None, limits).unwrap_err();
        assert!(
            matches!(
                e,
                OtlpError::TooLarge {
                    what: "request body",
                    limit: 100
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the request body is over the limit of 100 bytes"
        );
        assert_eq!(e.kind(), "too large");
        // Uncompressed, the decoded limit applies too.
        let limits = BodyLimits {
            body: 1_000,
            decoded: 100,
        };
        let e = decode_limited(&[0; 101], "application/x-protobuf", None, limits).unwrap_err();
        assert!(matches!(e, OtlpError::TooLarge { limit: 100, .. }), "{e:?}");
    }

    #[test]
    fn a_gzip_bomb_is_cut_off_at_the_decoded_limit() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; 8 << 20]).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let limits = BodyLimits {
            body: 64 << 10,
            decoded: 1 << 20,
        };
        let e = decode_limited(&bomb, "application/x-protobuf", Some("gzip"), limits).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the decompressed request body is over the limit of 1048576 bytes"
        );
    }

    /// The Node fixture's JSON, changed by `edit`.
    fn node_json(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
        let mut v: Value = serde_json::from_slice(&fixture("node-json").body).unwrap();
        edit(&mut v);
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn a_json_id_that_is_not_hex_is_refused_naming_the_span() {
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] =
                json!("zz f92f3577b34da6a3ce929d0e0e4736");
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resourceSpans[0].scopeSpans[0].spans[1].traceId: `zz f92f3577b34da6a3ce929d0e0e4736` is not an id of 16 bytes (32 hex digits)"
        );
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["parentSpanId"] =
                json!("+f2e3d4c5b6a7988");
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert!(
            e.to_string().contains("spans[0].parentSpanId: `+f2e"),
            "{e}"
        );
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
                .as_object_mut()
                .unwrap()
                .remove("spanId");
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resourceSpans[0].scopeSpans[0].spans[0].spanId: missing (an id of 8 bytes, 16 hex digits)"
        );
    }

    #[test]
    fn json_that_is_not_otlp_is_refused_with_where() {
        let e = decode(b"not json", "application/json", None).unwrap_err();
        assert!(matches!(e, OtlpError::Json(_)), "{e:?}");
        assert_eq!(e.kind(), "json");
        let e = decode(
            br#"{"resourceSpans": [{"scopeSpans": 5}]}"#,
            "application/json",
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("line 1 column"), "{e}");
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = json!("soon");
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert!(e.to_string().contains("\"soon\""), "{e}");
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["kind"] =
                json!("SPAN_KIND_SIDEWAYS");
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resourceSpans[0].scopeSpans[0].spans[0].kind: `SPAN_KIND_SIDEWAYS` is not a SpanKind"
        );
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0]["value"] =
                json!({"bytesValue": "***"});
        });
        let e = decode(&body, "application/json", None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "resourceSpans[0].scopeSpans[0].spans[0].attributes: `gen_ai.tool.name`: bytesValue `***` is not base64"
            ),
            "{e}"
        );
    }

    /// What the proto3 JSON mapping lets a writer do besides what OTLP/JSON asks:
    /// `.proto` field names, enum names, 64-bit integers as numbers or strings, bytes
    /// in base64 (standard or URL-safe), `null`, a base64 id; and an all-zero parent.
    #[test]
    fn the_json_mappings_other_forms_are_read() {
        let body = json!({
            "resource_spans": [{
                "resource": {"attributes": [{"key": "service.name", "value": {"string_value": "svc"}}]},
                "scope_spans": [{"spans": [
                    {
                        "trace_id": "5B8EFFF798038103D269B633813FC60C",
                        "span_id": "EEE19B7EC3C1B174",
                        "parent_span_id": "0000000000000000",
                        "name": "a",
                        "kind": "SPAN_KIND_CLIENT",
                        "start_time_unix_nano": 1_544_712_660_000_000_000_u64,
                        "end_time_unix_nano": "1544712661000000000",
                        "status": {"code": "STATUS_CODE_ERROR", "message": "bad"},
                        "attributes": [
                            {"key": "i", "value": {"int_value": "-12"}},
                            {"key": "i2", "value": {"intValue": 1e3}},
                            {"key": "d", "value": {"doubleValue": "NaN"}},
                            {"key": "d2", "value": {"doubleValue": 2}},
                            {"key": "b", "value": {"bytes_value": "AAH+/w=="}},
                            {"key": "b2", "value": {"bytesValue": "AAH-_w"}},
                            {"key": "empty", "value": {}},
                            {"key": "none"},
                            {"key": "list", "value": {"arrayValue": {"values": null}}},
                            {"key": "map", "value": {"kvlist_value": {"values": [{"key": "x", "value": {"boolValue": true}}]}}},
                        ],
                        "unknownField": {"ignored": true},
                    },
                    {
                        "traceId": "W47/95gDgQPSabYzgT/GDA==",
                        "spanId": "7uGbfsPBsXQ=",
                        "parentSpanId": "",
                        "kind": 99,
                        "status": {"code": 1},
                    },
                    {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175", "status": null, "attributes": null},
                ]}],
            }, {"scopeSpans": null}],
        });
        let spans = decode(
            &serde_json::to_vec(&body).unwrap(),
            "application/json",
            None,
        )
        .unwrap();
        assert_eq!(spans.len(), 3);
        let a = &spans[0];
        assert_eq!(a.trace_id.hex(), "5b8efff798038103d269b633813fc60c");
        assert_eq!(a.span_id.hex(), "eee19b7ec3c1b174");
        assert_eq!(a.parent_span_id, None);
        assert_eq!(a.kind, SpanKind::Client);
        assert_eq!(a.start_unix_nano, 1_544_712_660_000_000_000);
        assert_eq!(a.end_unix_nano, 1_544_712_661_000_000_000);
        assert_eq!(a.status, SpanStatus::Error("bad".into()));
        assert_eq!(a.service.as_deref(), Some("svc"));
        assert_eq!(
            Value::Object(a.attributes.clone()),
            json!({
                "i": -12, "i2": 1000, "d": "NaN", "d2": 2.0, "b": "0001feff", "b2": "0001feff",
                "empty": null, "none": null, "list": [], "map": {"x": true},
            })
        );
        // The base64 ids are the same as the hex ones.
        assert_eq!(spans[1].trace_id, a.trace_id);
        assert_eq!(spans[1].span_id, a.span_id);
        assert_eq!(spans[1].kind, SpanKind::Unspecified);
        assert_eq!(spans[1].status, SpanStatus::Ok);
        assert_eq!(spans[1].name, "");
        assert_eq!(spans[2].status, SpanStatus::Unset);
        assert!(spans[2].attributes.is_empty());
    }

    #[test]
    fn an_empty_request_has_no_spans() {
        assert_eq!(decode(b"", "application/x-protobuf", None).unwrap(), vec![]);
        assert_eq!(decode(b"{}", "application/json", None).unwrap(), vec![]);
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let mut value = json!({"stringValue": "x"});
        for _ in 0..200 {
            value = json!({"arrayValue": {"values": [value]}});
        }
        let body = node_json(|v| {
            v["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0]["value"] = value;
        });
        // serde_json's own writer has no depth limit; its reader stops at 128.
        let e = decode(&body, "application/json", None).unwrap_err();
        assert!(e.to_string().contains("recursion limit"), "{e}");

        let mut any = pb::AnyValue {
            value: Some(pb::Value::String("x".into())),
        };
        for _ in 0..200 {
            any = pb::AnyValue {
                value: Some(pb::Value::Array(pb::ArrayValue { values: vec![any] })),
            };
        }
        let request = pb::ExportTraceServiceRequest {
            resource_spans: vec![pb::ResourceSpans {
                resource: None,
                scope_spans: vec![pb::ScopeSpans {
                    spans: vec![pb::Span {
                        trace_id: vec![1; 16],
                        span_id: vec![2; 8],
                        attributes: vec![pb::KeyValue {
                            key: "deep".into(),
                            value: Some(any),
                        }],
                        ..Default::default()
                    }],
                }],
            }],
        };
        let e = decode(
            &prost::Message::encode_to_vec(&request),
            "application/x-protobuf",
            None,
        )
        .unwrap_err();
        assert!(matches!(e, OtlpError::Protobuf(_)), "{e:?}");
    }

    #[test]
    fn error_bodies_are_rpc_status_in_the_requests_encoding() {
        use prost::Message;
        let pb = error_body(Encoding::Protobuf, "bad span");
        assert_eq!(
            pb::RpcStatus::decode(pb.as_slice()).unwrap().message,
            "bad span"
        );
        let js: Value = serde_json::from_slice(&error_body(Encoding::Json, "bad span")).unwrap();
        assert_eq!(js, json!({"message": "bad span"}));
        assert_eq!(success_body(Encoding::Protobuf), b"");
        assert_eq!(success_body(Encoding::Json), b"{}");
    }

    #[test]
    fn doubles_json_cannot_hold_are_named() {
        assert_eq!(double(f64::INFINITY), json!("Infinity"));
        assert_eq!(double(f64::NEG_INFINITY), json!("-Infinity"));
        assert_eq!(double(1.5), json!(1.5));
        assert_eq!(clip(&"é".repeat(70)), format!("{}…", "é".repeat(64)));
    }
}
