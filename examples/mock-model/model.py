#!/usr/bin/env python3
"""A deterministic stand-in for an OpenAI-compatible chat-completions endpoint.

It plays a tiny expense-assistant model: asked about the policy it calls `get_policy`,
given an expense type and amount it calls `create_expense`, and after a tool result it
answers in words. The same request always gets the same answer, so the cassettes in
agent-tests/.cassettes were recorded against it and can be re-recorded at will:

    python3 examples/mock-model/model.py --port 8765 &
    AGENTEST_CASSETTES=record cargo test --test agent_tests -- openai

Point `AGENTEST_LLM_BASE_URL` at a real endpoint (and set its key) to record against a
real model instead.
"""
import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TYPES = ("travel", "meal", "equipment", "training", "lodging")


def tool_names(req):
    return {t.get("function", {}).get("name") for t in req.get("tools") or []}


def text_of(message):
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def call(name, arguments, seed):
    digest = hashlib.sha256(seed.encode()).hexdigest()[:12]
    return {
        "id": f"call_{digest}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, sort_keys=True)},
    }


def simulate_user(system, said):
    """Plays the built-in simulator's user: reveals the goal's facts when asked. The
    simulator sees the conversation from the user's side: `said` is the agent's last
    reply, the last (user) message of its chat."""
    goal = re.search(r"Goal: (.*)", system)
    goal = goal.group(1) if goal else ""
    said = said.lower()
    if "cancel" in goal.lower():
        return {"content": json.dumps(booking_user(system, said))}
    amount = re.search(r"\$\s?[\d,]+", goal)
    kind = next((t for t in TYPES if t in goal.lower()), "travel")
    if "submitted" in said:
        reply = {"message": "Thanks, that is all.", "goal_achieved": True, "reasoning": "the expense is submitted"}
    elif "confirm" in said:
        reply = {"message": "Yes, confirm", "goal_achieved": False, "reasoning": "the draft matches my goal"}
    elif "type" in said or "amount" in said:
        reply = {"message": f"{kind.capitalize()}, {amount.group(0) if amount else '$100'}", "goal_achieved": False,
                 "reasoning": "the assistant asked for the details"}
    else:
        reply = {"message": "Hi, I need to file an expense", "goal_achieved": False, "reasoning": "opening"}
    return {"content": json.dumps(reply)}


def booking_user(system, said):
    """The customer of the booking example: terse when the persona is impatient."""
    terse = "impatient" in system.lower()
    ref = re.search(r"\b[A-Z]{3}\d{3}\b", system)
    ref = ref.group(0) if ref else "ABC123"
    if "is cancelled" in said:
        message = "Good." if terse else "Thank you, that is all I needed."
        return {"message": message, "goal_achieved": True, "reasoning": "the booking is cancelled"}
    if "shall i cancel" in said:
        message = "Yes. Do it." if terse else "Yes, please cancel it."
        return {"message": message, "goal_achieved": False, "reasoning": "the agent found my booking"}
    if "reference" in said:
        message = ref if terse else f"Sure, it is {ref}."
        return {"message": message, "goal_achieved": False, "reasoning": "the agent asked for the reference"}
    message = "Cancel my appointment." if terse else "Hi, I need to cancel my haircut appointment for tomorrow."
    return {"message": message, "goal_achieved": False, "reasoning": "opening"}


def evaluate_criteria(prompt):
    """Plays EvalStudio's criteria judge: success when the assistant's last message says
    the booking is cancelled or the expense submitted; failure when it apologises."""
    said = [line for line in prompt.splitlines() if line.startswith("assistant: ")]
    last = said[-1].lower() if said else ""
    success = any(w in last for w in ("is cancelled", "submitted"))
    failure = any(w in last for w in ("sorry", "cannot", "failed"))
    return {"content": json.dumps({
        "successMet": success,
        "failureMet": failure,
        "confidence": 0.9 if success or failure else 0.6,
        "reasoning": "the assistant's last message " + (
            "completes the request" if success else "gives up" if failure else "does not complete the request yet"),
    })}


def judge(prompt):
    """Plays the built-in judge: a reply that apologises or reports a failure fails."""
    reply = prompt.split("The reply to judge:", 1)[-1].strip().lower()
    bad = next((w for w in ("sorry", "failed", "error") if w in reply), None)
    verdict = {
        "passed": bad is None and bool(reply),
        "score": 0.1 if bad else 0.9,
        "reason": f"the reply says '{bad}'" if bad else "the reply answers the request",
        "suggestions": ["resolve the failure before replying"] if bad else [],
    }
    return {"content": json.dumps(verdict)}


def answer(req):
    messages = req.get("messages") or []
    system = text_of(messages[0]) if messages and messages[0].get("role") == "system" else ""
    if system.startswith("You are simulating a user"):
        return simulate_user(system, text_of(messages[-1]))
    if "successMet" in system:
        return evaluate_criteria(text_of(messages[-1]))
    if system.startswith("You are a strict, fair evaluator"):
        return judge(text_of(messages[-1]))
    last = messages[-1] if messages else {"role": "user", "content": ""}
    tools = tool_names(req)
    if last.get("role") == "tool":
        result = json.loads(last.get("content") or "null")
        if isinstance(result, dict) and "error" in result:
            err = result["error"]
            why = err.get("message") if isinstance(err, dict) else str(err)
            return {"content": f"Sorry, that failed: {why}. Please try again later."}
        if isinstance(result, dict) and "meal_limit_per_day" in result:
            return {"content": f"Meals are reimbursed up to ${result['meal_limit_per_day']} per day."}
        if isinstance(result, dict) and "id" in result:
            return {"content": f"Done: expense {result['id']} is saved as {result.get('status', 'draft')}."}
        return {"content": f"The tool answered: {json.dumps(result, sort_keys=True)}"}
    text = text_of(last)
    low = text.lower()
    amount = re.search(r"\$\s?([\d,]+)", text)
    kind = next((t for t in TYPES if t in low), None)
    if "policy" in low and "get_policy" in tools:
        return {"content": None, "tool_calls": [call("get_policy", {"topic": "meals"}, text)]}
    if amount and kind and "create_expense" in tools:
        value = int(amount.group(1).replace(",", ""))
        return {"content": None, "tool_calls": [call("create_expense", {"amount": value, "type": kind}, text)]}
    return {"content": "Hello! I can file expenses and explain the expense policy."}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        req = json.loads(body)
        message = {"role": "assistant", **answer(req)}
        prompt = sum(len(text_of(m)) for m in req.get("messages") or []) // 4 + 1
        completion = len(json.dumps(message)) // 4 + 1
        payload = json.dumps({
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()
