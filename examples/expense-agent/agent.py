#!/usr/bin/env python3
"""An example expense-reimbursement assistant speaking the agentest protocol.

Deterministic on purpose (no model): it follows the seed design's expense flow with
two tools, `create_expense` and `get_policy`, so the suites in agent-tests/ run
offline and give the same answer every time.

    python3 agent.py            # process agent: one JSON request per line on stdin
    python3 agent.py --http 0   # HTTP agent on 127.0.0.1; prints "listening on PORT"

A few trigger words make it misbehave on purpose, for the harness's own tests:
CRASH (exits), GARBAGE (prints a non-JSON line), BADSHAPE (a reply with no content),
SLEEP <seconds> (answers late), STDERR (writes to stderr first).
"""
import json
import re
import sys
import time

POLICY = {"meal_limit_per_day": 75, "receipt_required_above": 25, "approval_required_above": 5000}
TYPES = ("travel", "meal", "equipment", "training", "lodging")


def draft_in(messages):
    """The expense drafted earlier in the conversation, if any."""
    for m in reversed(messages):
        for call in m.get("tool_calls") or []:
            if call.get("name") == "create_expense" and call.get("result"):
                return call["result"]
    return None


def respond(req):
    messages = req.get("messages") or []
    text = req.get("input") or ""
    low = text.lower()

    if "CRASH" in text:
        sys.stderr.write("fatal: the agent crashed on purpose\n")
        sys.stderr.flush()
        sys.exit(3)
    if "GARBAGE" in text:
        return "this is not json"
    if "BADSHAPE" in text:
        return {"status": "ok"}
    if "STDERR" in text:
        sys.stderr.write("debug: thinking about it\n")
        sys.stderr.flush()
    m = re.search(r"SLEEP (\d+(?:\.\d+)?)", text)
    if m:
        time.sleep(float(m.group(1)))
        return {"content": "I slept."}

    amount_match = re.search(r"\$\s?([\d,]+(?:\.\d+)?)", text)
    amount = float(amount_match.group(1).replace(",", "")) if amount_match else None
    kind = next((t for t in TYPES if t in low), None)
    if amount is not None and amount == int(amount):
        amount = int(amount)

    if "policy" in low or "limit" in low:
        return {
            "content": "Meals are reimbursed up to $75 per day; receipts are required above $25, "
            "and expenses above $5000 need manager approval.",
            "tool_calls": [{"name": "get_policy", "arguments": {"topic": "expenses"}, "result": POLICY}],
            "awaiting_input": False,
        }

    if re.search(r"\b(yes|confirm|confirmed)\b", low):
        draft = draft_in(messages)
        if draft is None:
            return {"content": "There is nothing to confirm yet. What would you like to submit?", "awaiting_input": True}
        expense = dict(draft, status="submitted", reference="EXP-2025-001")
        return {
            "content": "Expense submitted. Reference: EXP-2025-001",
            "data": {"expense": expense},
            "awaiting_input": False,
        }

    if amount is not None and kind is not None:
        if amount > POLICY["approval_required_above"]:
            return {
                "content": "This requires manager approval. Please provide the PO number.",
                "awaiting_input": True,
                "input_hint": "PO number, e.g. PO-1234",
            }
        expense = {"id": "EXP-0001", "type": kind, "amount": amount, "status": "draft"}
        return {
            "content": f"I've drafted a {kind} expense of ${amount}. Shall I submit it? Please confirm.",
            "tool_calls": [
                {"name": "create_expense", "arguments": json.dumps({"type": kind, "amount": amount}), "result": expense}
            ],
            "data": {"expense": expense},
            "awaiting_input": True,
            "usage": {"input_tokens": 12, "output_tokens": 9},
        }

    if "expense" in low or "reimburse" in low:
        return {
            "content": "Sure. What type of expense would you like to submit, and what is the amount?",
            "awaiting_input": True,
            "input_hint": "e.g. travel, $350",
        }

    if "json" in low:
        return {"content": json.dumps({"status": "ok", "types": list(TYPES[:2]), "count": 2})}

    if re.match(r"(?i)\s*(hello|hi|hey|good (morning|day))\b", text):
        return {"content": f"Hello! I'm the expense assistant. {text.strip()} to you too. How can I help?"}

    return {"content": f"I can help with expenses. You said: {text}"}


def serve_stdio():
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = respond(json.loads(line))
        out = reply if isinstance(reply, str) else json.dumps(reply)
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


def serve_http(port):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            req = json.loads(body)
            if self.headers.get("Authorization") not in (None, "Bearer test-token"):
                self.send_response(401)
                payload = b'{"error": "bad token"}'
            else:
                reply = respond(req)
                payload = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]))
    else:
        serve_stdio()
