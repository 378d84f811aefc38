#!/usr/bin/env python3
"""A deliberately unreliable agent, for testing repeated runs (`runs`, gates, flaky
detection). It speaks the agentest process protocol: one JSON request per line on stdin,
one JSON reply per line on stdout.

Each reply is "yes" (a pass, for a case asserting `contains "yes"`) or "no", decided
per repeat (the request's `metadata.repeat`, 1 when absent) by the case's `options`:

- `pattern`: a string of P (answer yes), F (answer no), E (exit with an error) and
  T (never answer: the case times out), used in order: repeat n takes the character at
  (n - 1) mod len.
- `p` (with an optional `seed`, default 0): answer yes with probability p. The draw is
  Python's `random.Random(f"{seed}:{test_id}:{repeat}").random() < p`, so it is the
  same for the same case and repeat on every machine.
- `sleep_ms`: wait this long before answering (a slow agent, for benchmarks).
- The environment variable RANDOM_AGENT_PATTERN, when set, is the pattern of every case
  (to make the same cases pass in one execution and fail in the next).
- `usage`: report these tokens with the reply (`{"input_tokens": .., "output_tokens": ..}`).
"""
import json
import os
import random
import sys
import time


def outcome(req):
    options = req.get("options") or {}
    repeat = int((req.get("metadata") or {}).get("repeat") or 1)
    pattern = os.environ.get("RANDOM_AGENT_PATTERN") or options.get("pattern")
    if pattern:
        return pattern[(repeat - 1) % len(pattern)]
    p = float(options.get("p", 1.0))
    seed = options.get("seed", 0)
    draw = random.Random(f"{seed}:{req.get('test_id', '')}:{repeat}").random()
    return "P" if draw < p else "F"


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        options = req.get("options") or {}
        if options.get("sleep_ms"):
            time.sleep(float(options["sleep_ms"]) / 1000.0)
        o = outcome(req)
        if o == "E":
            sys.stderr.write("random agent: failing on purpose\n")
            sys.stderr.flush()
            sys.exit(3)
        if o == "T":
            time.sleep(3600)
        reply = {"content": "yes" if o == "P" else "no"}
        if options.get("usage"):
            reply["usage"] = options["usage"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
