#!/usr/bin/env python3
"""A before/after hook: receives the case as JSON on stdin; a non-zero exit fails the case."""
import json
import sys

case = json.load(sys.stdin)
if "id" not in case:
    sys.stderr.write("hook received no case id\n")
    sys.exit(1)
