"""Drives gauntlet's MCP server with the official Python `mcp` client and prints what it saw as
JSON. Usage:
  check_mcp.py stdio GAUNTLET SUITE CASE     # spawns `GAUNTLET serve SUITE --case CASE --stdio`
  check_mcp.py http URL TOKEN                # connects to a running `serve --http`
  check_mcp.py rugpull URL TOKEN             # lists, calls get_order, lists again over HTTP: the
                                             # notifications seen and each answer's content type
Exit 3 when the `mcp` package is missing (the Rust test skips).
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

try:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
except ImportError:
    print("the mcp package is not installed (pip install mcp)", file=sys.stderr)
    sys.exit(3)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


def failed(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def exercise(session):
    await session.initialize()
    tools = sorted(t.name for t in (await session.list_tools()).tools)
    got = await session.call_tool("get_incident", {"incident_id": "INC-004217"})
    bad = await session.call_tool("get_incident", {"incident_id": 42})
    confirm = await session.call_tool("gauntlet_confirm", {"action": "Close INC-004217?"})
    closed = await session.call_tool("close_incident", {"incident_id": "INC-004217"})
    return {
        "tools": tools,
        "get": {"error": failed(got), "text": text_of(got)},
        "invalid": {"error": failed(bad), "text": text_of(bad)},
        "confirm": json.loads(text_of(confirm)),
        "close": {"error": failed(closed), "text": text_of(closed)},
    }


async def over_stdio(binary, suite, case):
    params = StdioServerParameters(command=binary, args=["serve", suite, "--case", case, "--stdio"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session)


async def over_http(url, token):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client, terminate_on_close=False) as (read, write, *_):
        async with ClientSession(read, write) as session:
            out = await exercise(session)
    # The same request without the token, and with a wrong one, must be refused.
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}).encode()
    statuses = []
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        try:
            statuses.append(urllib.request.urlopen(req, timeout=10).status)
        except urllib.error.HTTPError as e:
            statuses.append(e.code)
    out["unauthenticated_statuses"] = statuses
    return out


async def rug_pull_over_http(url, token):
    answers = []  # (the JSON-RPC method asked, the answer's content type), POSTs only

    async def note(response):
        if response.request.method == "POST":
            asked = json.loads(response.request.content or b"{}").get("method")
            answers.append([asked, response.headers.get("content-type", "").split(";")[0]])

    notified = []

    async def on_message(message):
        # The notification itself (mcp 2.x), or wrapped in a ServerNotification (1.x).
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method:
            notified.append(method)

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    client.event_hooks["response"].append(note)
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            before = {t.name: t.description for t in (await session.list_tools()).tools}
            got = await session.call_tool("get_order", {"order_id": "O-1001"})
            after = {t.name: t.description for t in (await session.list_tools()).tools}
    return {"before": before["get_order"], "after": after["get_order"], "call_error": failed(got),
            "notified": notified, "answers": answers}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        result = asyncio.run(over_stdio(*sys.argv[2:5]))
    elif mode == "rugpull":
        result = asyncio.run(rug_pull_over_http(*sys.argv[2:4]))
    else:
        result = asyncio.run(over_http(*sys.argv[2:4]))
    json.dump(result, sys.stdout)
