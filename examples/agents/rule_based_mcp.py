"""A rule-based incident-desk agent: no model, just the official `mcp` client.

gauntlet starts it once per trial (`--agent 'cmd:python3 examples/agents/rule_based_mcp.py'`),
with the case on stdin and the world's MCP endpoint in GAUNTLET_MCP_URL / GAUNTLET_MCP_TOKEN. It
prints its final answer on stdout. It exists to show the wiring; its rules only know incidents.
"""
import asyncio
import json
import os
import re
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


def failed(result):
    # `is_error` in mcp 2, `isError` in mcp 1.
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def main():
    case = json.load(sys.stdin)
    request = case["user_input"]
    url, token = os.environ["GAUNTLET_MCP_URL"], os.environ["GAUNTLET_MCP_TOKEN"]
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client, terminate_on_close=False) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            ids = re.findall(r"INC-\d{6}", request)
            lowered = request.lower()
            if not ids:
                listed = await session.call_tool("list_incidents", {"status": "open"})
                found = [i["id"] for i in json.loads(text_of(listed))] if not failed(listed) else []
                return "Open incidents: " + ", ".join(found) if found else "I found no open incidents."
            incident = ids[0]
            got = await session.call_tool("get_incident", {"incident_id": incident})
            if failed(got):
                return f"{incident} was not found ({text_of(got)})."
            details = json.loads(text_of(got))
            if "close" in lowered and "close_incident" in tools:
                confirm = await session.call_tool("gauntlet_confirm", {"action": f"Close {incident} ({details.get('title', '')})?"})
                if not json.loads(text_of(confirm))["approved"]:
                    return f"Understood, {incident} stays {details.get('status')}."
                closed = await session.call_tool("close_incident", {"incident_id": incident})
                if failed(closed):
                    return f"I could not close {incident}: {text_of(closed)}. You may lack permission."
                return f"{incident} is closed."
            return f"{incident} ({details.get('title')}) is {details.get('status')}."


if __name__ == "__main__":
    print(asyncio.run(main()))
