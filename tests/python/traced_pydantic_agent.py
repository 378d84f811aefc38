"""A pydantic-ai agent with two tools, traced by pydantic-ai's own instrumentation and
exported over OTLP/HTTP (protobuf, gzip), served as an agentest `http` agent (the
default `format = "agentest"`), for the OTLP trace receiver's tests (tests/python/TRACED.md).

    python traced_pydantic_agent.py

listens on a free loopback port and prints `listening on PORT`. POST / takes agentest's
request (`{"session_id", "turn", "input", "messages", ...}`) and answers `{"content"}`
only: the tool calls and the model's tokens are in the trace, nowhere else (unless
TRACED_AGENT_REPLY_TOOL_CALLS=1). The incoming `traceparent` header is extracted, so the
agent's spans are children of the caller's span in the caller's trace.

Environment:
- AGENTEST_MODEL_URL: the OpenAI-compatible API (`.../v1`); AGENTEST_MODEL_NAME the model
  (default `scripted`).
- OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`): where
  spans go, read by the exporter itself. Compression is gzip unless
  OTEL_EXPORTER_OTLP_(TRACES_)COMPRESSION says otherwise; OTEL_BSP_SCHEDULE_DELAY is
  honoured by the batch processor.
- TRACED_AGENT_FLUSH: `before-reply` (default: the spans are exported before the answer
  is sent), `after-reply` (flushed once the answer is sent, so they arrive just after it),
  or `batch` (never flushed per request: the batch processor sends them on its schedule).
- TRACED_AGENT_PROPAGATE=0: ignore `traceparent` (each run starts a trace of its own; the
  agent span still carries `gen_ai.conversation.id` = the request's `session_id`).
- TRACED_AGENT_REPLY_TOOL_CALLS=1: list the tool calls in the reply as well (with their
  ids), to check that a call seen twice is counted once.
"""

import json
import os
import socket

import uvicorn
from opentelemetry import context, propagate, trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

FLUSH = os.environ.get("TRACED_AGENT_FLUSH", "before-reply")
PROPAGATE = os.environ.get("TRACED_AGENT_PROPAGATE", "1") != "0"
REPLY_TOOL_CALLS = os.environ.get("TRACED_AGENT_REPLY_TOOL_CALLS") == "1"


def compression() -> Compression | None:
    # None lets the exporter read the environment; gzip is the default here.
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") or os.environ.get(
        "OTEL_EXPORTER_OTLP_COMPRESSION"
    ):
        return None
    return Compression.Gzip


provider = TracerProvider(resource=Resource.create({"service.name": "traced-pydantic-agent"}))
# The exporter reads its endpoint from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT; the processor
# its delay from OTEL_BSP_SCHEDULE_DELAY (5 s when unset).
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(compression=compression())))

# Version 5 (the default of pydantic-ai 2.x, named so that an upgrade cannot change it
# silently): `invoke_agent`, `chat MODEL` and `execute_tool NAME` spans with
# `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`.
Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, version=5))

model = OpenAIChatModel(
    os.environ.get("AGENTEST_MODEL_NAME", "scripted"),
    provider=OpenAIProvider(base_url=os.environ["AGENTEST_MODEL_URL"], api_key="not-a-key"),
)
agent = Agent(
    model,
    name="weather_agent",
    instructions="Answer with the weather and the local time of the city asked about.",
    retries=0,
)


@agent.tool_plain
def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "sky": "sunny", "celsius": 22}


@agent.tool_plain
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"14:05 in {city}"


# Each conversation's history, by agentest's session id.
histories: dict[str, list] = {}


def tool_calls(messages: list) -> list:
    calls, results = [], {}
    for m in messages:
        for part in m.parts:
            if isinstance(part, ToolReturnPart):
                results[part.tool_call_id] = part.content
    for m in messages:
        if isinstance(m, ModelResponse):
            for part in m.parts:
                if isinstance(part, ToolCallPart):
                    calls.append(
                        {
                            "id": part.tool_call_id,
                            "name": part.tool_name,
                            "arguments": part.args_as_dict(),
                            "result": results.get(part.tool_call_id),
                        }
                    )
    return calls


async def turn(request: Request):
    body = await request.json()
    session = body.get("session_id", "")
    parent = propagate.extract(dict(request.headers)) if PROPAGATE else context.Context()
    token = context.attach(parent)
    try:
        result = await agent.run(
            body["input"],
            message_history=histories.get(session),
            conversation_id=session or None,
        )
    finally:
        context.detach(token)
    histories[session] = result.all_messages()
    reply = {"content": result.output}
    if REPLY_TOOL_CALLS:
        reply["tool_calls"] = tool_calls(result.new_messages())
    if FLUSH == "before-reply":
        provider.force_flush()
    task = BackgroundTask(provider.force_flush) if FLUSH == "after-reply" else None
    return JSONResponse(json.loads(json.dumps(reply, default=str)), background=task)


app = Starlette(routes=[Route("/", turn, methods=["POST"])])

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is said: connections wait in the backlog until uvicorn
    # accepts them, instead of being refused while it starts.
    sock.listen(128)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        provider.shutdown()
