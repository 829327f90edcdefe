"""A rule-based incident-desk agent in plain Python: no model, no transport.

`agent(case, tools, user)` is all gauntlet needs: `gauntlet.run("examples/incident-desk",
agent=agent)` calls it in process, and `examples/agents/mcp_adapter.py` runs the very same
function as a `cmd:` agent over MCP (the two runs score alike; the Python package's tests check it).
"""
import re

from gauntlet import ToolError


def agent(case, tools, user):
    ids = re.findall(r"INC-\d{6}", case.user_input)
    if not ids:
        try:
            found = [i["id"] for i in tools.call("list_incidents", status="open")]
        except ToolError:
            found = []
        return "Open incidents: " + ", ".join(found) if found else "I found no open incidents."
    incident = ids[0]
    try:
        details = tools.call("get_incident", incident_id=incident)
    except ToolError as e:
        return f"{incident} was not found ({e})."
    if "close" in case.user_input.lower() and any(t["name"] == "close_incident" for t in tools.list()):
        if not user.confirm(f"Close {incident} ({details.get('title', '')})?"):
            return f"Understood, {incident} stays {details.get('status')}."
        try:
            tools.call("close_incident", incident_id=incident)
        except ToolError as e:
            return f"I could not close {incident}: {e}. You may lack permission."
        return f"{incident} is closed."
    return f"{incident} ({details.get('title')}) is {details.get('status')}."
