"""An Agent2Agent agent (a2a-sdk 1.x), for the `a2a` agent kind's tests
(tests/functional/a2a.rs).

    python a2a_agent.py RECEIVED_FILE [CARD_HOST]

listens on a free loopback port, prints `listening on PORT` once the socket listens, and
appends every request it receives to RECEIVED_FILE as one JSON line
`{"path", "version", "body"}` (`version`: the `A2A-Version` header, or null).

It serves, on the same port:
- /.well-known/agent-card.json: a card whose `supportedInterfaces` are JSON-RPC 1.0 at
  /rpc, then HTTP+JSON 1.0 at /rest, then JSON-RPC 0.3 at /rpc (CARD_HOST, when given,
  replaces 127.0.0.1 in the interfaces' URLs: a card pointing at another host);
- /rpc: JSON-RPC, v1.0 and v0.3 (`A2A-Version` tells them apart);
- /rest: HTTP+JSON (`POST /rest/message:send`);
- /moved/.well-known/agent-card.json: a card whose interface is on `localhost` (another
  host than the card's 127.0.0.1);
- /portal/...: an HTML page with status 200 (a login page in front of a wrong URL).

The executor: a message whose text starts with `ping` is answered with a Message (no
task); `fail` ends its task `failed`; `unsupported` is a JSON-RPC error (the SDK's
UnsupportedOperationError); `stall` leaves its task `working` and returns; `hang`
starts work and never finishes; otherwise a new task asks for input once
(`input-required`, "Which city?"), and the answer completes it with a text artifact
`answer`, a data artifact `booking` and a file artifact `receipt` (one inline file, one
by URL).
"""

import asyncio
import json
import socket
import sys

import uvicorn
from a2a.helpers.proto_helpers import (
    new_data_part,
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)
from a2a.utils.errors import UnsupportedOperationError
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

RECEIVED = sys.argv[1]
CARD_HOST = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"


class BookingExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if text.startswith("ping"):
            await event_queue.enqueue_event(
                new_text_message(f"pong: {text}", context_id=context.context_id)
            )
            return
        if text == "unsupported":
            raise UnsupportedOperationError(message="bookings by pigeon are not supported")
        task = context.current_task
        first = task is None
        if first:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if text == "fail":
            await updater.failed(updater.new_agent_message([new_text_part("no rooms left")]))
        elif text == "stall":
            # Still working when the executor returns: no state agentest can end a turn on.
            await updater.start_work(updater.new_agent_message([new_text_part("looking")]))
        elif text == "hang":
            await updater.start_work(updater.new_agent_message([new_text_part("looking")]))
            await asyncio.sleep(3600)
        elif first:
            await updater.requires_input(updater.new_agent_message([new_text_part("Which city?")]))
        else:
            await updater.add_artifact([new_text_part(f"Booked a room in {text}.")], name="answer")
            await updater.add_artifact(
                [new_data_part({"city": text, "nights": 2})], name="booking"
            )
            await updater.add_artifact(
                [
                    new_raw_part(b"room 12", media_type="text/plain", filename="receipt.txt"),
                    new_url_part("https://example.com/r/12.pdf", media_type="application/pdf"),
                ],
                name="receipt",
            )
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def card(port: int, host: str = CARD_HOST) -> AgentCard:
    base = f"http://{host}:{port}"
    return AgentCard(
        name="booking",
        description="Books rooms; asks for the city first.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="book", name="book", description="books a room", tags=["booking"])],
    )


async def portal(request):
    return HTMLResponse("<html><body><h1>Sign in to continue</h1></body></html>")


def logged(app):
    """The ASGI app, with each request's body appended to RECEIVED before it is handled."""

    async def wrapper(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            chunks.append(message)
            if not message.get("more_body"):
                break
        body = b"".join(m.get("body", b"") for m in chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode(errors="replace")
        with open(RECEIVED, "a") as f:
            entry = {"path": scope["path"], "version": headers.get("a2a-version"), "body": parsed}
            f.write(json.dumps(entry) + "\n")
        replay = iter(chunks)

        async def again():
            # The body once, then the client's own messages (a stream watches for its
            # disconnect).
            chunk = next(replay, None)
            return chunk if chunk is not None else await receive()

        return await app(scope, again, send)

    return wrapper


if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    agent_card = card(port)
    handler = DefaultRequestHandler(
        agent_executor=BookingExecutor(), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = [
        *create_agent_card_routes(
            card(port, "localhost"), card_url="/moved/.well-known/agent-card.json"
        ),
        Route("/portal/{rest:path}", portal, methods=["GET", "POST"]),
        *create_agent_card_routes(agent_card),
        *create_jsonrpc_routes(handler, rpc_url="/rpc", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True, path_prefix="/rest"),
    ]
    app = logged(Starlette(routes=routes))
    # Listening before the port is said: connections wait in the backlog until uvicorn
    # accepts them, instead of being refused while it starts.
    sock.listen(128)
    print(f"listening on {port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
