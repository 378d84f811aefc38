#!/usr/bin/env python3
"""An agent for tau2-bench's `mock` domain (a task manager), for running tau2 task files
offline. It speaks the agentest process protocol: one JSON request per line on stdin, one
JSON reply per line on stdout, one process per conversation.

The environment is the agent's, as in tau2: on the first request it builds the mock
domain's database (tau2's `db.json`: task_1 "Test task", pending, for user_1) and
applies what the task's `metadata.tau2.initial_state` says: `initialization_data`
(`agent_data` merged in), `initialization_actions` (tool calls on the assistant's
environment, notifications on the user's) and the tool calls of `message_history`.

It understands plain requests (create a task called '...' for user_N, mark task_N (or
"the task we created") as completed, a compliment, deleting tasks, which it cannot do
and transfers to a human) and calls the domain's tools: create_task,
update_task_status, transfer_to_human_agents. After every turn it reports, in
`data.tau2.env_assertions`, the result of each of the task's env assertions
(`assert_task_status` on its own environment, `assert_notification_status` on the
user's), in order: agentest checks them there, since it has no environment of its own.
"""
import json
import re
import sys


class Env:
    def __init__(self):
        self.tasks = {"task_1": {"task_id": "task_1", "title": "Test task",
                                 "description": "A test task", "status": "pending"}}
        self.users = {"user_1": {"user_id": "user_1", "name": "Test User", "tasks": ["task_1"]}}
        self.notifications = {}
        self.last_created = None
        self.history = False

    def create_task(self, user_id, title, description=None):
        task_id = f"task_{len(self.tasks) + 1}"
        task = {"task_id": task_id, "title": title, "description": description, "status": "pending"}
        self.tasks[task_id] = task
        self.users.setdefault(user_id, {"user_id": user_id, "tasks": []})["tasks"].append(task_id)
        self.last_created = task_id
        return task

    def update_task_status(self, task_id, status):
        if task_id not in self.tasks:
            return {"error": f"no task {task_id}"}
        self.tasks[task_id]["status"] = status
        return self.tasks[task_id]

    def add_notification(self, notification_id, message, task_id=None):
        self.notifications[notification_id] = {"message": message, "task_id": task_id, "status": "unread"}

    def check(self, assertion):
        args = assertion.get("arguments") or {}
        name = assertion.get("func_name")
        if name == "assert_task_status":
            task = self.tasks.get(args.get("task_id"))
            return bool(task) and task["status"] == args.get("expected_status")
        if name == "assert_notification_status":
            n = self.notifications.get(args.get("notification_id"))
            return bool(n) and n["status"] == args.get("expected_status")
        return None

    def set_up(self, state):
        state = state or {}
        data = (state.get("initialization_data") or {}).get("agent_data") or {}
        for task_id, task in (data.get("tasks") or {}).items():
            self.tasks[task_id] = dict(task)
        for user_id, user in (data.get("users") or {}).items():
            self.users[user_id] = dict(user, user_id=user_id)
        for action in state.get("initialization_actions") or []:
            args = action.get("arguments") or {}
            if action.get("func_name") == "create_task":
                self.create_task(**args)
            elif action.get("func_name") == "add_notification":
                self.add_notification(**args)
        for message in state.get("message_history") or []:
            self.history = True
            for call in message.get("tool_calls") or []:
                if call.get("name") == "create_task":
                    self.create_task(**call.get("arguments") or {})


def respond(env, text):
    low = text.lower()
    calls, said = [], []

    def call(name, arguments, result):
        calls.append({"name": name, "arguments": arguments, "result": result})

    if "delete" in low:
        summary = "User wants to delete all their tasks; the tools available cannot delete tasks."
        call("transfer_to_human_agents", {"summary": summary}, "Transfer successful")
        return "Deleting tasks is not something I can do, so I am transferring you to a human agent.", calls, False
    created = re.search(r"called ['\"](.+?)['\"]", text)
    if created and "creat" in low:
        user = re.search(r"user_\d+", text)
        args = {"user_id": user.group(0) if user else "user_1", "title": created.group(1)}
        task = env.create_task(**args)
        call("create_task", args, task)
        said.append(f"I have created the task '{task['title']}' ({task['task_id']}) for {args['user_id']}; it is pending.")
    if "complet" in low:
        named = re.search(r"task_\d+", text)
        task_id = named.group(0) if named else env.last_created
        args = {"task_id": task_id, "status": "completed"}
        result = env.update_task_status(**args)
        call("update_task_status", args, result)
        context = "Following up on the task from our earlier conversation: " if env.history or not named else ""
        said.append(f"{context}{task_id} is now marked as completed.")
    if "compliment" in low:
        said.append("You are doing a great job staying on top of your tasks!")
    if not said:
        return "How can I help you with your tasks?", calls, True
    return " ".join(said), calls, False


def main():
    env = None
    for line in sys.stdin:
        req = json.loads(line)
        tau2 = (req.get("metadata") or {}).get("tau2") or {}
        if env is None:
            env = Env()
            env.set_up(tau2.get("initial_state"))
        content, calls, awaiting = respond(env, req.get("input") or "")
        checks = [env.check(a) for a in tau2.get("env_assertions") or []]
        reply = {"content": content, "tool_calls": calls, "awaiting_input": awaiting,
                 "data": {"tau2": {"env_assertions": checks}}}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
