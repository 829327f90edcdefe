"""The agent under test. gauntlet calls agent(case, tools, user) once per trial of each case:
case.user_input is what the user asked; tools.call(NAME, **arguments) calls a tool of the
world (worlds/tasks.yaml) and returns its result, or raises gauntlet.ToolError; user.confirm()
and user.ask() reach the simulated user (the case's `user`). It returns the answer.

This one follows rules and passes the suite: put your model or framework (the OpenAI Agents
SDK, LangGraph, ...) behind the same function.
"""

import re


def agent(case, tools, user):
    task_id = re.search(r"T-\d+", case.user_input).group(0)
    task = tools.call("get_task", task_id=task_id)
    if "done" in case.user_input.lower():
        if not user.confirm(f'Mark {task_id} "{task["title"]}" as done?'):
            return f"{task_id} stays open."
        tools.call("complete_task", task_id=task_id)
        return f"{task_id} is done."
    return f"{task_id} is owned by {task['owner']}."
