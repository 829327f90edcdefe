"""What `gauntlet shadow` adds to a tool call: the official Python MCP client calls a read of a
real MCP server (npm's server-filesystem) directly over stdio, then through `gauntlet shadow
--stdio` in front of the same server, in one run, and prints per-call latency (p50, p99) of both
and the difference. Writes are timed too: through the proxy a write is answered without the
upstream (recorded, never executed), directly it is executed.

Usage: shadow_overhead.py GAUNTLET [CALLS]   (CALLS per path, 2000 by default)
Needs: pip install mcp; npm ci --prefix crates/gauntlet/tests/npm
"""
import asyncio
import os
import statistics
import sys
import tempfile
import time

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "../../crates/gauntlet/tests/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def timed(command, args, root, calls):
    params = StdioServerParameters(command=command, args=args)
    path = os.path.join(root, "a.txt")
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.list_tools()
            for name, tool, a in (
                ("read", "read_text_file", {"path": path}),
                ("write", "write_file", {"path": path, "content": "hello\n"}),
            ):
                for _ in range(50):
                    await s.call_tool(tool, a)
                xs = []
                for _ in range(calls):
                    t = time.perf_counter()
                    r = await s.call_tool(tool, a)
                    xs.append((time.perf_counter() - t) * 1000)
                    assert not r.is_error, r
                out[name] = xs
    return out


async def main():
    gauntlet = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "a.txt"), "w") as f:
            f.write("hello\n")
        direct = await timed("node", [SERVER, root], root, calls)
        run = os.path.join(root, "run")
        proxied = await timed(gauntlet, ["shadow", "--upstream", f"cmd:node {SERVER} {root}", "--stdio", "--out", run], root, calls)
    print(f"{calls} calls per path, official Python client over stdio, server-filesystem (npm)")
    print(f"{'':6} {'direct p50':>11} {'p99':>8} {'proxied p50':>12} {'p99':>8} {'added p50':>10} {'p99':>8}  (ms)")
    for k in ("read", "write"):
        d, p = direct[k], proxied[k]
        print(f"{k:6} {pct(d, 50):11.3f} {pct(d, 99):8.3f} {pct(p, 50):12.3f} {pct(p, 99):8.3f} "
              f"{pct(p, 50) - pct(d, 50):10.3f} {pct(p, 99) - pct(d, 99):8.3f}")
    print("(a proxied write is recorded and answered without the upstream; a direct one writes the file)")


asyncio.run(main())
