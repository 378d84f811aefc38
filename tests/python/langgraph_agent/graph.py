"""A small LangGraph agent for agentest's `langgraph` kind tests (tests/functional/langgraph.rs).

Its model is an OpenAI-compatible server at $AGENTEST_MODEL_URL (a scripted one on
loopback in the tests; in the real-model lane a real one, named by $AGENTEST_MODEL_NAME,
streamed when $AGENTEST_MODEL_STREAMS is 1, each answer at most
$AGENTEST_MODEL_MAX_TOKENS tokens). The model node calls it with one tool bound; a tool call goes
through a ToolNode and back to the model; a model answer starting with "ASK " goes to a
node that calls interrupt() with the rest of the text, and the resumed answer becomes a
human message for the model. The `x-user-*` headers (langgraph.json lets them into
`configurable`) and a configurable `tone` are told to the model in a system message, so
that a test sees them arrive.
"""

import os

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt
from typing_extensions import TypedDict


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


TOOLS = [get_weather]

max_tokens = os.environ.get("AGENTEST_MODEL_MAX_TOKENS")
model = ChatOpenAI(
    base_url=os.environ["AGENTEST_MODEL_URL"],
    api_key="not-a-key",
    model=os.environ.get("AGENTEST_MODEL_NAME", "scripted"),
    # The scripted server answers JSON, never a stream.
    disable_streaming=os.environ.get("AGENTEST_MODEL_STREAMS") != "1",
    stream_usage=True,
    # As `max_tokens` in the body: langchain-openai sends its own `max_tokens` as
    # `max_completion_tokens`, which llama.cpp's server does not read.
    extra_body={"max_tokens": int(max_tokens)} if max_tokens else None,
    max_retries=0,
).bind_tools(TOOLS)


def call_model(state: MessagesState, config: RunnableConfig):
    configurable = config.get("configurable", {})
    told = [
        f"{key}: {configurable[key]}"
        for key in ("x-user-id", "x-user-team", "tone")
        if key in configurable
    ]
    prompt = [SystemMessage("; ".join(told))] if told else []
    return {"messages": [model.invoke(prompt + state["messages"])]}


def ask(state: MessagesState):
    question = state["messages"][-1].text()[len("ASK ") :]
    answer = interrupt(question)
    return {"messages": [HumanMessage(answer)]}


def route(state: MessagesState):
    last = state["messages"][-1]
    if last.tool_calls:
        return "tools"
    if last.text().startswith("ASK "):
        return "ask"
    return END


builder = StateGraph(MessagesState)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_node("ask", ask)
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route, ["tools", "ask", END])
builder.add_edge("tools", "model")
builder.add_edge("ask", "model")
graph = builder.compile()


class Count(TypedDict):
    count: int


def bump(state: Count):
    return {"count": state.get("count", 0) + 1}


# A graph whose state holds no messages: an agent pointed at it gets no reply.
counter_builder = StateGraph(Count)
counter_builder.add_node("bump", bump)
counter_builder.add_edge(START, "bump")
counter_builder.add_edge("bump", END)
counter = counter_builder.compile()
