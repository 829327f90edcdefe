"""Drives `gauntlet shadow` with the official Python `mcp` client: one MCP session per run.
Usage:
  shadow_client.py http URL TOKEN OPS_JSON
  shadow_client.py stdio OPS_JSON -- COMMAND ARGS...
OPS_JSON is a list of operations: {"list": true} lists the tools; {"tool", "args", "meta"?}
calls one; {"concurrent": [calls]} makes the calls at once (their answers, in order). Prints a JSON list with one entry per operation: for a list, the tools (name,
read_only, has_output_schema); for a call, {error, text, structured} or {rpc_error} when the
call failed at the protocol level (the client raised). The client validates structured content
against each tool's output schema, so a non-conforming answer shows up as an rpc_error.
Exit 3 when the `mcp` package is missing.
"""
import asyncio
import json
import sys

try:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
except ImportError:
    print("the mcp package is not installed (pip install mcp)", file=sys.stderr)
    sys.exit(3)


async def call(session, op):
    try:
        r = await session.call_tool(op["tool"], op.get("args", {}), meta=op.get("meta"))
        return {
            "error": bool(r.is_error),
            "text": "".join(getattr(c, "text", "") for c in r.content),
            "structured": r.structured_content,
        }
    except Exception as e:  # the proxy ended the session, or the answer broke the schema
        return {"rpc_error": f"{type(e).__name__}: {e}"}


async def exercise(session, ops):
    await session.initialize()
    out = []
    for op in ops:
        if op.get("list"):
            tools = (await session.list_tools()).tools
            out.append([{
                "name": t.name,
                "read_only": bool(t.annotations and t.annotations.read_only_hint),
                "has_output_schema": t.output_schema is not None,
            } for t in tools])
        elif "concurrent" in op:
            out.append(list(await asyncio.gather(*(call(session, o) for o in op["concurrent"]))))
        else:
            out.append(await call(session, op))
    return out


async def over_http(url, token, ops):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            return await exercise(session, ops)


async def over_stdio(command, ops):
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await exercise(session, ops)


if __name__ == "__main__":
    if sys.argv[1] == "http":
        result = asyncio.run(over_http(sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
    else:
        sep = sys.argv.index("--")
        result = asyncio.run(over_stdio(sys.argv[sep + 1:], json.loads(sys.argv[2])))
    json.dump(result, sys.stdout)
