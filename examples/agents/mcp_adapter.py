"""Runs a Python agent `agent(case, tools, user)` as a `cmd:` agent: its tools and user come
from gauntlet's MCP server of the trial (the official `mcp` client), so the same function can be
tested in process with `gauntlet.run` and out of process over MCP.

  gauntlet run examples/incident-desk \
      --agent 'cmd:python3 examples/agents/mcp_adapter.py examples/agents/incident_agent.py:agent'
"""
import asyncio
import importlib.util
import json
import os
import re
import sys
import threading

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from gauntlet import ToolError


class Case:
    def __init__(self, case):
        self.case_id, self.user_input = case.get("case_id", ""), case["user_input"]
        self.epoch, self.seed = case.get("epoch", 0), case.get("seed", 0)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


class Remote:
    """Tools and user over one MCP session, called from the agent's (synchronous) thread."""

    def __init__(self, session, loop):
        self.session, self.loop = session, loop

    def _wait(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def list(self):
        listed = self._wait(self.session.list_tools()).tools
        # mcp 2 spells fields in snake case, mcp 1 in camel case.
        field = lambda o, snake, camel: getattr(o, snake, None) if hasattr(o, snake) else getattr(o, camel, None)
        return [{"name": t.name, "description": t.description or "",
                 "parameters": field(t, "input_schema", "inputSchema"),
                 "read_only": bool(t.annotations and field(t.annotations, "read_only_hint", "readOnlyHint"))}
                for t in listed if not t.name.startswith("gauntlet_")]

    def call(self, name, /, **arguments):
        result = self._wait(self.session.call_tool(name, arguments))
        text = text_of(result)
        if getattr(result, "is_error", getattr(result, "isError", False)):
            found = re.match(r"error (\d+): (.*?)(?: \(retry after ([\d.]+) s\))?$", text, re.S)
            if not found:
                raise ToolError(500, text)
            retry = float(found.group(3)) if found.group(3) else None
            raise ToolError(int(found.group(1)), found.group(2), retry)
        return json.loads(text) if text[:1] in "[{" else text

    def confirm(self, action):
        return json.loads(text_of(self._wait(self.session.call_tool("gauntlet_confirm", {"action": action}))))["approved"]

    def ask(self, question):
        return text_of(self._wait(self.session.call_tool("gauntlet_ask_user", {"question": question})))


def load(target):
    path, _, name = target.rpartition(":")
    spec = importlib.util.spec_from_file_location("agent_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


async def main(agent):
    case = Case(json.load(sys.stdin))
    url, token = os.environ["GAUNTLET_MCP_URL"], os.environ["GAUNTLET_MCP_TOKEN"]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            remote = Remote(session, asyncio.get_running_loop())
            return await asyncio.to_thread(agent, case, remote, remote)


if __name__ == "__main__":
    print(asyncio.run(main(load(sys.argv[1]))))
