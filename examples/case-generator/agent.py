#!/usr/bin/env python3
"""An example case generator, as an agent (`-i "agents:generator?count=3&focus=policy"`).

It speaks the agentest process protocol and answers the seed's generator contract: the
request's `metadata` is the `GeneratorInput` (`test_mode: "generator"`, `target_agent`,
`count`, `focus` and every other query parameter), and the reply is
`{"cases": [...]}` as `data`. The cases are for the example expense assistant
(examples/expense-agent), so they pass against it. Each case keeps what the generator
was given in its `metadata.generated_from`.

Parameters that make it misbehave on purpose, for agentest's own tests:
  broken=1   the second case has a misspelt key (`asserts`)
  collide=1  every case has the id "G1"
  fewer=1    one case fewer than `count`
  none=1     no cases at all
  prose=1    the first answer is prose, not JSON (a repair request gets JSON)
"""
import json
import sys

QUESTIONS = [
    ("What is the meal limit per day?", "75"),
    ("What is the receipt policy?", "25"),
    ("What is the approval limit?", "5000"),
    ("What is the expense policy?", "reimbursed"),
]


def cases_for(meta):
    count = int(meta.get("count") or 3)
    if meta.get("fewer") == "1":
        count -= 1
    if meta.get("none") == "1":
        count = 0
    given = {k: v for k, v in meta.items() if k != "repair"}
    cases = []
    for i in range(count):
        question, expected = QUESTIONS[i % len(QUESTIONS)]
        case = {
            "id": "G1" if meta.get("collide") == "1" else f"G{i + 1}",
            "name": f"{meta.get('focus') or 'general'} question {i + 1}",
            "input": question,
            "assert": {"type": "contains", "value": expected},
            "metadata": {"generated_from": given},
        }
        if meta.get("broken") == "1" and i == 1:
            case["asserts"] = case.pop("assert")
        cases.append(case)
    return cases


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        meta = req.get("metadata") or {}
        if meta.get("test_mode") != "generator":
            reply = {"content": "I only generate test cases."}
        elif meta.get("prose") == "1" and "repair" not in meta:
            reply = {"content": "Sure! Here are some great test cases for you."}
        else:
            reply = {"content": "", "data": {"cases": cases_for(meta)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
