"""A process agent (agentest's `type = "process"`: one JSON request per line on stdin, one
JSON reply per line on stdout) that traces each turn with OpenTelemetry spans made by
hand in the GenAI semantic conventions, exported over OTLP/HTTP (protobuf, or JSON when
OTEL_EXPORTER_OTLP_PROTOCOL is `http/json`) to wherever the environment says, for the
OTLP trace receiver's tests (tests/python/TRACED.md).

    python traced_process_agent.py

No model: per turn it calls `get_weather` when the input says "weather", `get_time` when
it says "time" (both, in that order, when it says both), the city being the input's
last word, and answers `{"content"}` only. A tool whose city is "Atlantis" fails: its
span's status is ERROR with `error.type`, and the reply says so. Spans per turn:

- `invoke_agent traced_process_agent` (INTERNAL), the turn's root, a child of the
  request's `metadata.traceparent` (else of $TRACEPARENT; else a trace of its own),
  with `gen_ai.conversation.id` = the request's `session_id`;
- its children: first `chat scripted` (CLIENT), a stand-in for a model call, with
  `gen_ai.operation.name = chat` and fixed `gen_ai.usage.input_tokens` = 12 and
  `gen_ai.usage.output_tokens` = 5 per turn; then one `execute_tool NAME` (INTERNAL) per
  tool called, with
  `gen_ai.operation.name = execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (JSON strings).

With TRACED_AGENT_SLEEP_MS=N the model call and each tool take N milliseconds, so the
spans have durations to draw (the HTML report's waterfall test).

Exporting: only through the environment agentest sets for process agents
(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_BSP_SCHEDULE_DELAY, OTEL_EXPORTER_OTLP_*_COMPRESSION).
With neither endpoint variable set it exports nothing. Spans go out on the batch
processor's schedule, not before each reply (TRACED_AGENT_FLUSH=before-reply flushes
them first), and the rest when stdin closes, before the agent exits.
"""

import json
import os
import re
import sys
import time

from opentelemetry import context, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

FLUSH = os.environ.get("TRACED_AGENT_FLUSH", "batch")
SLEEP = int(os.environ.get("TRACED_AGENT_SLEEP_MS", "0")) / 1000
INPUT_TOKENS, OUTPUT_TOKENS = 12, 5


def exporter():
    """The OTLP span exporter the environment asks for, or None when it names no endpoint."""
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    ):
        return None
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    # Endpoint, compression, headers and timeout all come from OTEL_EXPORTER_OTLP_*.
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "http/json":
        from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    sys.exit(f"traced_process_agent: OTLP protocol {protocol!r} is not supported here")


provider = TracerProvider(resource=Resource.create({"service.name": "traced-process-agent"}))
if (span_exporter := exporter()) is not None:
    # The delay comes from OTEL_BSP_SCHEDULE_DELAY (5 s when unset).
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
tracer = provider.get_tracer("traced_process_agent", "1.0")
propagator = TraceContextTextMapPropagator()


def weather(city: str) -> dict:
    return {"city": city, "sky": "sunny", "celsius": 22}


def local_time(city: str) -> str:
    return f"14:05 in {city}"


TOOLS = {"get_weather": weather, "get_time": local_time}


def parent_context(request: dict) -> context.Context:
    metadata = request.get("metadata") or {}
    carrier = {}
    if metadata.get("traceparent"):
        carrier["traceparent"] = metadata["traceparent"]
        if metadata.get("tracestate"):
            carrier["tracestate"] = metadata["tracestate"]
    elif os.environ.get("TRACEPARENT"):
        carrier["traceparent"] = os.environ["TRACEPARENT"]
        if os.environ.get("TRACESTATE"):
            carrier["tracestate"] = os.environ["TRACESTATE"]
    return propagator.extract(carrier, context=context.Context())


def run_tool(name: str, city: str, call_id: str) -> tuple[str, bool]:
    arguments = {"city": city}
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
        },
        # The error is said by hand below, as a tool framework does.
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        time.sleep(SLEEP)
        if city == "Atlantis":
            span.set_status(Status(StatusCode.ERROR, f"no such city: {city}"))
            span.set_attribute("error.type", "LookupError")
            return f"{name} failed: no such city: {city}", False
        result = TOOLS[name](city)
        span.set_attribute(
            "gen_ai.tool.call.result", result if isinstance(result, str) else json.dumps(result)
        )
        return result if isinstance(result, str) else json.dumps(result), True


def turn(request: dict) -> dict:
    text = request.get("input", "")
    words = re.findall(r"[A-Za-z]+", text)
    city = words[-1] if words else "nowhere"
    asked = (("get_weather", "weather"), ("get_time", "time"))
    wanted = [name for name, word in asked if word in text.lower()]
    token = context.attach(parent_context(request))
    try:
        with tracer.start_as_current_span(
            "invoke_agent traced_process_agent",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "traced_process_agent",
                "gen_ai.conversation.id": request.get("session_id", ""),
            },
        ):
            with tracer.start_as_current_span(
                "chat scripted",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "scripted",
                    "gen_ai.request.model": "scripted",
                    "gen_ai.response.model": "scripted",
                    "gen_ai.usage.input_tokens": INPUT_TOKENS,
                    "gen_ai.usage.output_tokens": OUTPUT_TOKENS,
                },
            ):
                time.sleep(SLEEP)
            said = [
                run_tool(name, city, f"call_{request.get('turn', 0)}_{i}")[0]
                for i, name in enumerate(wanted, 1)
            ]
    finally:
        context.detach(token)
    content = "; ".join(said) if said else f"No tool for: {text}"
    if FLUSH == "before-reply":
        provider.force_flush()
    return {"content": content}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(turn(json.loads(line))), flush=True)
    # stdin closed: the conversation is over; what is still batched goes now.
    provider.shutdown()


if __name__ == "__main__":
    main()
