#!/usr/bin/env python3
"""An example case generator, as a script (`-i "scripts:expense-cases?scenario=meals"`).

agentest runs it with the parameters as one JSON object on stdin (`count` a number,
the rest strings) and reads the cases it prints: here one per line (JSON Lines; a JSON
array works too). The cases are for the example expense assistant
(examples/expense-agent), and each keeps the parameters in `metadata.params`.
"""
import json
import sys

SCENARIOS = {
    "meals": [("I had a $40 meal with a client", "meal")],
    "travel": [("I took a $300 travel trip to Berlin", "travel")],
}


def main():
    params = json.load(sys.stdin)
    scenario = params.get("scenario") or "meals"
    if scenario not in SCENARIOS:
        sys.stderr.write(f"unknown scenario {scenario!r}; use one of {sorted(SCENARIOS)}\n")
        sys.exit(2)
    count = int(params.get("count") or 2)
    for i in range(count):
        text, kind = SCENARIOS[scenario][i % len(SCENARIOS[scenario])]
        print(json.dumps({
            "id": f"{scenario}-{i + 1}",
            "input": text,
            "assert": {"type": "contains", "value": kind},
            "metadata": {"params": params},
        }))


if __name__ == "__main__":
    main()
