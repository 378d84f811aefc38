#!/usr/bin/env python3
"""A scripted simulated user for tau2-bench's `mock` domain: a simulator agent
(`--simulator user`) that plays each task's user deterministically, so the tasks run the
same every time, offline. It speaks the agentest process protocol and reads the seed's
simulator input from the request's `metadata` (the task's `goal`, and the conversation).

Its first message asks for what the goal says (create a task called '...', mark a task
as completed, delete every task). Then it ends as tau2's users do: `###STOP###` once the
agent has done it (after asking for a compliment when the goal wants one),
`###TRANSFER###` when the agent hands it to a human, `###OUT-OF-SCOPE###` when the
agent's answer leaves it nothing to say.
"""
import json
import re
import sys


def opening(goal):
    low = goal.lower()
    if "delete" in low:
        return "I want to delete all my current tasks."
    title = re.search(r"called '(.+?)'", goal)
    if title:
        user = re.search(r"user_\d+", goal)
        return f"Please create a new task called '{title.group(1)}' for {user.group(0) if user else 'user_1'}."
    task = re.search(r"task_\d+", goal)
    if "notification" in low and task:
        return f"I checked my notifications: {task.group(0)} was assigned to me and I have completed it. Please update its status to completed."
    if task:
        return f"Please mark {task.group(0)} as completed."
    if "complet" in low:
        return "Please mark the task we created as completed."
    return "###OUT-OF-SCOPE###"


def next_message(meta):
    goal = meta.get("goal") or ""
    said = [m.get("content") or "" for m in meta.get("conversation") or [] if m.get("role") == "user"]
    if not said:
        return opening(goal)
    last = (meta.get("last_response") or "").lower()
    if "human agent" in last:
        return "###TRANSFER###"
    wants_compliment = "compliment" in goal.lower()
    if wants_compliment and not any("compliment" in s for s in said) and "created" in last:
        return "Thank you! Could you also give me a compliment?"
    if any(w in last for w in ("created", "marked as completed", "great job")):
        return "###STOP###"
    return "###OUT-OF-SCOPE###"


def main():
    for line in sys.stdin:
        meta = json.loads(line).get("metadata") or {}
        answer = {"message": next_message(meta), "goal_achieved": False}
        print(json.dumps({"data": answer}), flush=True)


if __name__ == "__main__":
    main()
