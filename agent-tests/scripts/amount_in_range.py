#!/usr/bin/env python3
"""A script assertion: checks the drafted expense amount against metadata bounds.

Receives {output, input, response, conversation, value, metadata} on stdin and answers
{"pass": bool, "message": str} on stdout.
"""
import json
import sys

req = json.load(sys.stdin)
data = (req.get("response") or {}).get("data") or {}
amount = (data.get("expense") or {}).get("amount")
meta = req.get("metadata") or {}
lo, hi = meta.get("min_amount", 0), meta.get("max_amount", float("inf"))
if amount is None:
    print(json.dumps({"pass": False, "message": "the reply drafted no expense"}))
elif lo <= amount <= hi:
    print(json.dumps({"pass": True, "message": f"amount {amount} within [{lo}, {hi}]"}))
else:
    print(json.dumps({"pass": False, "message": f"amount {amount} outside [{lo}, {hi}]"}))
