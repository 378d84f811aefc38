//! Traces: an OTLP/HTTP receiver on loopback, the spans agents send it, and what those
//! spans become (tool calls, model usage, a span tree per turn).

// Outside the tests nothing calls these yet: the run wires them to `[traces]`.
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the run starts the receiver once `[traces]` is wired"
    )
)]
mod otlp;
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the run starts the receiver once `[traces]` is wired"
    )
)]
mod receiver;
#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the receiver and the conventions that use it are being written"
    )
)]
mod span;

#[cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "the agents and assertions that use it are being wired"
    )
)]
mod convention;
