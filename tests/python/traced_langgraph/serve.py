"""A LangGraph graph (a model node and a ToolNode with two tools) traced by OpenInference's
LangChain instrumentation (openinference-instrumentation-langchain) and exported over
OTLP/HTTP (protobuf, gzip), served as an agentest `http` agent (the default
`format = "agentest"`), for the OTLP trace receiver's tests (tests/python/TRACED.md).

    python serve.py

listens on a free loopback port and prints `listening on PORT`. POST / takes agentest's
request and answers `{"content"}` only: the tool calls and the model's tokens are in the
trace (unless TRACED_AGENT_REPLY_TOOL_CALLS=1). The graph runs in-process, not behind
`langgraph dev`: that server does not read an incoming `traceparent`, and this endpoint
extracts it, so the graph's spans are children of the caller's span in the caller's
trace. Each span also carries `session.id` = the request's `session_id`
(OpenInference's `using_session`).

Environment: as tests/python/traced_pydantic_agent.py (AGENTEST_MODEL_URL,
AGENTEST_MODEL_NAME, OTEL_EXPORTER_OTLP_*, OTEL_BSP_SCHEDULE_DELAY, TRACED_AGENT_FLUSH,
TRACED_AGENT_PROPAGATE, TRACED_AGENT_REPLY_TOOL_CALLS). OPENINFERENCE_ENABLE_GENAI_SEMCONV=true
makes OpenInference add OpenTelemetry GenAI attributes to its own; unset, spans carry
OpenInference's names only.
"""

import json
import os
import socket

import uvicorn
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry import context, propagate
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
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


provider = TracerProvider(resource=Resource.create({"service.name": "traced-langgraph-agent"}))
# The exporter reads its endpoint from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT; the processor
# its delay from OTEL_BSP_SCHEDULE_DELAY (5 s when unset).
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(compression=compression())))
# Before the graph is built: the instrumentation hooks LangChain's callback managers.
LangChainInstrumentor().instrument(tracer_provider=provider)


@tool
def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "sky": "sunny", "celsius": 22}


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return f"14:05 in {city}"


TOOLS = [get_weather, get_time]

model = ChatOpenAI(
    base_url=os.environ["AGENTEST_MODEL_URL"],
    api_key="not-a-key",
    model=os.environ.get("AGENTEST_MODEL_NAME", "scripted"),
    # The scripted server answers JSON, never a stream.
    disable_streaming=True,
    max_retries=0,
).bind_tools(TOOLS)


def call_model(state: MessagesState):
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", tools_condition, ["tools", END])
builder.add_edge("tools", "model")
graph = builder.compile(name="weather_graph")

# Each conversation's messages, by agentest's session id.
histories: dict[str, list] = {}


def tool_calls(messages: list) -> list:
    results = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
    return [
        {"id": c["id"], "name": c["name"], "arguments": c["args"], "result": results.get(c["id"])}
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]


async def turn(request: Request):
    body = await request.json()
    session = body.get("session_id", "")
    before = histories.get(session, [])
    parent = propagate.extract(dict(request.headers)) if PROPAGATE else context.Context()
    token = context.attach(parent)
    try:
        with using_session(session):
            state = await graph.ainvoke({"messages": before + [HumanMessage(body["input"])]})
    finally:
        context.detach(token)
    messages = state["messages"]
    histories[session] = messages
    reply = {"content": messages[-1].text}
    if REPLY_TOOL_CALLS:
        reply["tool_calls"] = tool_calls(messages[len(before) :])
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
