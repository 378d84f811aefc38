#!/usr/bin/env python3
"""An example agent for the ElizaOS scenarios in tests/eliza-corpus/: deterministic,
no model, speaking the agentest process protocol (one JSON request per line on stdin,
one JSON reply per line on stdout). It reports ElizaOS-style `actions`, and takes the
time a long request would take, so that `execution_time` has something to measure.
"""
import json
import sys
import time

RULES = [
    # (words that must all appear, reply, actions, seconds to take)
    (("list", "issues"), "Here are the open issues for elizaOS/eliza: #123 Mocked Issue for Eliza, #456 Generic Mocked Issue.", ["LIST_GITHUB_ISSUES"], 0),
    (("authenticate",), "I will authenticate user testuser now: authentication succeeded.", ["AUTHENTICATE_USER"], 0),
    (("status", "user123"), "The account user123 is active and in good standing.", ["LOOKUP_USER"], 0),
    (("machine learning",), "Machine learning is a way for computers to learn patterns from examples, like learning to spot spam from many labelled emails. Does that make sense so far?", ["REPLY"], 0),
    (("charged twice",), "I'm sorry about the double charge; I understand how frustrating that is. Let me look into your billing: follow these steps and I will issue a refund for the duplicate.", ["SEARCH_KNOWLEDGE_BASE", "REPLY"], 0),
    (("billing",), "I can help with your billing question. Could you tell me which charge looks wrong?", ["REPLY"], 0),
    (("what you can help",), "I can help you with billing, accounts and GitHub issues.", ["REPLY"], 0),
    (("simple greeting",), "Hello! Nice to meet you.", ["REPLY"], 0.1),
    (("detailed analysis",), "Artificial intelligence helps medicine, transport and science; for example it reads scans and plans routes.", ["REPLY"], 0.5),
    (("research paper",), "A history of computing: from the abacus to the transistor and beyond.", ["REPLY"], 0.7),
]

for line in sys.stdin:
    request = json.loads(line)
    text = request["input"].lower()
    reply, actions, wait = "I can help with that. Could you tell me more?", ["REPLY"], 0
    for words, answer, acts, secs in RULES:
        if all(w in text for w in words):
            reply, actions, wait = answer, acts, secs
            break
    time.sleep(wait)
    print(json.dumps({"content": reply, "actions": actions}), flush=True)
