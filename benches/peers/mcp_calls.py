"""The official `mcp` Python client making N get_incident calls over streamable HTTP in one
session, against gauntlet's server or FastMCP's. Prints one JSON line: the server's CPU seconds
per call (read from /proc for SERVER_PID around the calls), p50 and p99 round trip in µs, the
median of the first and of the last tenth of the calls (flat over a long session?), and the
server's resident memory growth in KiB per 1,000 calls.

usage: python3 mcp_calls.py URL TOKEN|- SERVER_PID N
"""
import asyncio
import json
import os
import statistics
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

url, token, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ticks = os.sysconf("SC_CLK_TCK")


def cpu_s():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def main():
    headers = {} if token == "-" else {"Authorization": f"Bearer {token}"}
    client = create_mcp_http_client(headers=headers)
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            args = {"incident_id": "INC-004218"}
            for _ in range(50):  # warm-up
                await session.call_tool("get_incident", args)
            cpu0, rss0 = cpu_s(), rss_kib()
            rtts = []
            for _ in range(n):
                t = time.perf_counter()
                result = await session.call_tool("get_incident", args)
                rtts.append((time.perf_counter() - t) * 1e6)
                assert "Search index lagging" in "".join(getattr(c, "text", "") for c in result.content)
            cpu1, rss1 = cpu_s(), rss_kib()
    # Flat over a long session: the first tenth's median against the last tenth's.
    tenth = max(1, n // 10)
    first, last = statistics.median(rtts[:tenth]), statistics.median(rtts[-tenth:])
    rtts.sort()
    print(json.dumps({
        "server_cpu_us_per_call": (cpu1 - cpu0) * 1e6 / n,
        "p50_first_tenth_us": first,
        "p50_last_tenth_us": last,
        "p50_us": statistics.median(rtts),
        "p99_us": rtts[int(0.99 * (len(rtts) - 1))],
        "rss_growth_kib_per_1000_calls": (rss1 - rss0) * 1000 / n,
    }))


asyncio.run(main())
