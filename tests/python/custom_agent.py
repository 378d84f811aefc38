"""An agent with its own REST/SSE API (Starlette, served by uvicorn), for the `http`
agent's `format = "custom"` tests (tests/functional/http_formats.rs).

    python custom_agent.py RECEIVED_FILE

listens on a free loopback port, prints `listening on PORT`, and appends every request
body it receives to RECEIVED_FILE as one JSON line `{"path", "body"}` (a
conversation's also with the `id` it handed out).

- POST /conversations          -> {"conversation": {"id": "conv-N"}}
- POST /chat                   -> {"answer": {"text"}, "steps": [...], "meta": {"tokens"}, "state": {...}}
- POST /chat/stream            -> text/event-stream: text deltas, a step, the usage; then the body ends
- POST /html                   -> an HTML error page with status 200
- POST /hang                   -> text/event-stream: one event, then nothing, never ending
"""

import asyncio
import itertools
import json
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.routing import Route

RECEIVED = sys.argv[1]
conversations = itertools.count(1)


async def received(request: Request, **extra) -> dict:
    body = await request.json()
    with open(RECEIVED, "a") as f:
        f.write(json.dumps({"path": request.url.path, "body": body, **extra}) + "\n")
    return body


def answer(body: dict) -> tuple[str, dict, dict]:
    query = body.get("query", "")
    text = f"[{body.get('conversation')}] you said: {query}"
    step = {"tool": "lookup", "args": {"q": query}, "output": {"hits": len(query)}}
    tokens = {"in": 11, "out": 7}
    return text, step, tokens


async def new_conversation(request: Request):
    id = f"conv-{next(conversations)}"
    await received(request, id=id)
    return JSONResponse({"conversation": {"id": id}})


async def chat(request: Request):
    body = await received(request)
    text, step, tokens = answer(body)
    return JSONResponse(
        {
            "answer": {"text": text},
            "steps": [step],
            "meta": {"tokens": tokens},
            "state": {"waiting": body.get("query", "").endswith("?"), "turn": body.get("turn")},
        }
    )


async def chat_stream(request: Request):
    body = await received(request)
    text, step, tokens = answer(body)

    async def events():
        words = text.split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            yield f"data: {json.dumps({'delta': piece})}\n\n"
            await asyncio.sleep(0.01)
        yield ": keep-alive\n\n"
        yield f"event: step\ndata: {json.dumps({'step': step})}\n\n"
        yield f"data: {json.dumps({'tokens': tokens})}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def html(request: Request):
    await received(request)
    return HTMLResponse("<html><body><h1>Welcome to nginx!</h1></body></html>")


async def hang(request: Request):
    await received(request)

    async def events():
        yield f"data: {json.dumps({'delta': 'thinking'})}\n\n"
        while True:
            await asyncio.sleep(3600)

    return StreamingResponse(events(), media_type="text/event-stream")


app = Starlette(
    routes=[
        Route("/conversations", new_conversation, methods=["POST"]),
        Route("/chat", chat, methods=["POST"]),
        Route("/chat/stream", chat_stream, methods=["POST"]),
        Route("/html", html, methods=["POST"]),
        Route("/hang", hang, methods=["POST"]),
    ]
)

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before the port is said: connections wait in the backlog until uvicorn
    # accepts them, instead of being refused while it starts.
    sock.listen(128)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
