"""A Python agent's tool call in process (`tools.call`, the wheel's extension) against the same
call over MCP/HTTP from Python (the official `mcp` client against `gauntlet serve --http`, the
trial's world served as `cmd:` agents reach it); then the trials per second of a trivial Python
agent (one tool call, one answer) at concurrency 1 and 8, and of the same agent waiting 10 ms
as for a model. Prints each figure and the ratio.

usage: python3 benches/peers/python_agent.py [CALLS] [EPOCHS]     (defaults 2000 and 20)
needs: the package installed (pip install ./python: the release profile), mcp; run from the
repository's root.
"""
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import gauntlet

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
CASE = "close-mitigated"
ARGS = {"incident_id": "INC-004217"}


def summary(ns):
    ns = sorted(ns)
    return {
        "p50_us": ns[len(ns) // 2] / 1000,
        "p99_us": ns[int(len(ns) * 0.99)] / 1000,
        "mean_us": statistics.fmean(ns) / 1000,
    }


def in_process(suite):
    timings = []

    def agent(case, tools, user):
        for _ in range(CALLS):
            t = time.perf_counter_ns()
            tools.call("get_incident", **ARGS)
            timings.append(time.perf_counter_ns() - t)
        return "done"

    gauntlet.run(suite, agent=agent, filter=CASE, faults="none", trial_timeout=3600)
    return summary(timings)


async def over_mcp(url, token):
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    timings = []
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(CALLS):
                t = time.perf_counter_ns()
                await session.call_tool("get_incident", ARGS)
                timings.append(time.perf_counter_ns() - t)
    return summary(timings)


def served(suite):
    server = subprocess.Popen(
        ["gauntlet", "serve", str(suite), "--case", CASE, "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = server.stdout.readline()
    endpoint = json.loads(line)
    try:
        return asyncio.run(over_mcp(endpoint["url"], endpoint["token"]))
    finally:
        server.terminate()
        server.wait()


def trials_per_second(suite, concurrency, wait_s=0.0):
    def agent(case, tools, user):
        tools.list()
        if wait_s:
            time.sleep(wait_s)  # a model call's wait: the GIL is free meanwhile
        return "ok"

    started = time.perf_counter()
    results = gauntlet.run(suite, agent=agent, epochs=EPOCHS, concurrency=concurrency, faults="none")
    took = time.perf_counter() - started
    return len(results.raw["trials"]) / took


def main():
    tmp = tempfile.mkdtemp()
    suite = os.path.join(tmp, "incident-desk")
    shutil.copytree("examples/incident-desk", suite, ignore=shutil.ignore_patterns(".gauntlet"))
    try:
        local, remote = in_process(suite), served(suite)
        print(f"get_incident, {CALLS} calls in one trial; ratio = in process / over MCP")
        print(f"{'':22}{'in process':>12}{'MCP/HTTP':>12}{'ratio':>8}")
        for key, label in [("p50_us", "p50 (µs)"), ("p99_us", "p99 (µs)"), ("mean_us", "mean (µs)")]:
            print(f"{label:22}{local[key]:>12.1f}{remote[key]:>12.1f}{local[key] / remote[key]:>8.3f}")
        one, eight = trials_per_second(suite, 1), trials_per_second(suite, 8)
        print(f"trivial Python agent, {EPOCHS} epochs of 23 cases: {one:.0f} trials/s at concurrency 1, "
              f"{eight:.0f} at 8 ({eight / one:.2f}x)")
        one, eight = trials_per_second(suite, 1, 0.01), trials_per_second(suite, 8, 0.01)
        print(f"the same agent waiting 10 ms (a model call): {one:.0f} trials/s at concurrency 1, "
              f"{eight:.0f} at 8 ({eight / one:.2f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
