"""A STAND-IN for an ElizaOS 1.x server's messaging sessions API (Starlette, served by
uvicorn), for the `eliza` agent kind's bad-answer tests (tests/functional/eliza.rs).
It follows the routes and shapes of @elizaos/server (packages/server/src/api/messaging/
sessions.ts, api/shared/response-handlers.ts, api/agents): a real ElizaOS server cannot
be made to answer wrongly on purpose, which these tests need.

    python eliza_standin.py RECEIVED_FILE

listens on a free loopback port, prints `listening on PORT`, and appends every request
it receives to RECEIVED_FILE as one JSON line `{"method", "path", "key", "body"}` (`key`:
the X-API-KEY header).

- GET  /api/agents: two agents, "Ada" and "Echo", and two named "Twin";
- POST /api/messaging/sessions: 400 unless agentId and userId are UUIDs, 404 for an
  unknown agent; else 201 with a new `sessionId` ("expired" sessions for Echo's user
  named in metadata.test_id "expired");
- POST /api/messaging/sessions/{id}/messages: `transport` "http" answers 201 with
  `agentResponse` by the message's text; "sse" streams `user_message`, `chunk`s and
  `done`. By text:
    "hello ..."    -> text "Hi! You said: ...", actions ["REPLY"], thought "greet them"
    "ignore"       -> no agentResponse (the agent chose not to answer)
    "blank"        -> agentResponse {"thought": "nothing to say"} (no text, no actions)
    "crash"        -> 500 {"success": false, "error": "Failed to process message in sync mode"}
    "cut"          -> (sse) chunks, then the body ends without `done`
    "oops"         -> (sse) an `error` event
  A session id that is not known answers 404 {"success": false, "error": {...}}.
"""

import asyncio
import json
import re
import socket
import sys
import uuid

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

RECEIVED = sys.argv[1]
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
AGENTS = [
    {"id": "6c5cf7c4-5a4e-4d0e-9a59-0d0c3e2b7a11", "name": "Ada", "status": "active"},
    {"id": "2f0a8c55-1b7e-4c8e-8e0b-7d5c1a9e3b22", "name": "Echo", "status": "active"},
    {"id": "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c55", "name": "Twin", "status": "active"},
    {"id": "0b1c2d3e-4f5a-4b6c-9d7e-1f2a3b4c5d66", "name": "Twin", "status": "active"},
]
sessions = {}


async def received(request: Request):
    raw = await request.body()
    body = json.loads(raw) if raw else None
    with open(RECEIVED, "a") as f:
        f.write(
            json.dumps(
                {
                    "method": request.method,
                    "path": request.url.path,
                    "key": request.headers.get("x-api-key"),
                    "body": body,
                }
            )
            + "\n"
        )
    return body


def error(status, code, message):
    return JSONResponse({"success": False, "error": {"code": code, "message": message}}, status)


async def agents(request: Request):
    await received(request)
    return JSONResponse({"success": True, "data": {"agents": AGENTS}})


async def new_session(request: Request):
    body = await received(request)
    agent, user = body.get("agentId", ""), body.get("userId", "")
    if not UUID.match(agent) or not UUID.match(user):
        return error(400, "INVALID_UUID", f"Invalid agentId or userId: {agent!r} {user!r}")
    if agent not in {a["id"] for a in AGENTS}:
        return error(404, "AGENT_NOT_FOUND", f"Agent not found: {agent}")
    sid = str(uuid.uuid4())
    if (body.get("metadata") or {}).get("test_id") != "expired":
        sessions[sid] = {"agentId": agent, "userId": user}
    return JSONResponse({"sessionId": sid, "agentId": agent, "userId": user}, 201)


def content_for(text: str):
    if text.startswith("hello"):
        return {
            "text": f"Hi! You said: {text}",
            "actions": ["REPLY"],
            "thought": "greet them",
        }
    if text == "blank":
        return {"thought": "nothing to say"}
    return None


async def message(request: Request):
    body = await received(request)
    sid = request.path_params["sid"]
    if sid not in sessions:
        return error(404, "SESSION_NOT_FOUND", f"Session not found: {sid}")
    text = body.get("content", "")
    transport = body.get("transport") or body.get("mode") or "websocket"
    user_message = {"id": str(uuid.uuid4()), "content": text}
    if transport == "http":
        if text == "crash":
            return JSONResponse(
                {"success": False, "error": "Failed to process message in sync mode"}, 500
            )
        answer = {"success": True, "userMessage": user_message}
        content = content_for(text)
        if content is not None:
            answer["agentResponse"] = content
        answer["sessionStatus"] = {"renewalCount": 1, "wasRenewed": True}
        return JSONResponse(answer, 201)

    async def events():
        yield f"event: user_message\ndata: {json.dumps(user_message)}\n\n"
        await asyncio.sleep(0.05)
        if text == "oops":
            yield f"event: error\ndata: {json.dumps({'error': 'model provider unreachable'})}\n\n"
            return
        content = content_for(text) or {"text": "…", "actions": ["REPLY"]}
        words = content.get("text", "").split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            chunk = {"messageId": user_message["id"], "chunk": piece, "index": i}
            yield f"event: chunk\ndata: {json.dumps(chunk)}\n\n"
            await asyncio.sleep(0.1)
        if text == "cut":
            return
        yield f"event: done\ndata: {json.dumps(content)}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


app = Starlette(
    routes=[
        Route("/api/agents", agents, methods=["GET"]),
        Route("/api/messaging/sessions", new_session, methods=["POST"]),
        Route("/api/messaging/sessions/{sid}/messages", message, methods=["POST"]),
    ]
)

if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
