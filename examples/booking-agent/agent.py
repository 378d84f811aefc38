#!/usr/bin/env python3
"""An example salon-booking assistant speaking the agentest protocol (one JSON request
per line on stdin, one reply per line on stdout). It stands for the agent an EvalStudio
connector calls in agent-tests/evalstudio/: it cancels a booking once it has the
booking reference and the customer's confirmation.

Deterministic on purpose (no model), so the EvalStudio project runs offline and gives
the same transcript every time. It keeps no state: each request carries the
conversation so far.
"""
import json
import re
import sys

REFERENCE = re.compile(r"\b([A-Z]{3}\d{3})\b")


def reference_in(messages, text):
    for m in [{"content": text}] + list(reversed(messages)):
        content = m.get("content")
        found = REFERENCE.search(content) if isinstance(content, str) else None
        if found:
            return found.group(1)
    return None


def respond(req):
    messages = req.get("messages") or []
    text = req.get("input") or ""
    low = text.lower()
    ref = reference_in(messages, text)
    asked_to_confirm = any(
        m.get("role") == "assistant" and "shall i cancel" in str(m.get("content", "")).lower()
        for m in messages
    )
    if ref and asked_to_confirm and re.search(r"\b(yes|confirm|please do|go ahead|do it)\b", low):
        return {
            "content": f"Done: booking {ref} is cancelled. You will get a confirmation email shortly.",
            "tool_calls": [{"name": "cancel_booking", "arguments": {"reference": ref},
                            "result": {"reference": ref, "status": "cancelled"}}],
        }
    if ref:
        return {
            "content": f"I found booking {ref}: a haircut tomorrow at 10:00. Shall I cancel it?",
            "tool_calls": [{"name": "find_booking", "arguments": {"reference": ref},
                            "result": {"reference": ref, "service": "haircut", "time": "tomorrow 10:00"}}],
            "awaiting_input": True,
        }
    if "cancel" in low or "appointment" in low or "booking" in low:
        return {"content": "I can help you cancel. What is your booking reference?", "awaiting_input": True}
    return {"content": "Hello! I can help you cancel or move a salon booking."}


for line in sys.stdin:
    if line.strip():
        sys.stdout.write(json.dumps(respond(json.loads(line))) + "\n")
        sys.stdout.flush()
