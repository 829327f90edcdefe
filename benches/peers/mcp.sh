#!/usr/bin/env bash
# One MCP tool call over streamable HTTP, the official Python client against `gauntlet serve
# --http` (the example suite's world, a trial recording every call) and against FastMCP serving
# the same tool, in its default setting and in its stateless JSON one: the server's CPU per
# call, the client's p50 and p99 round trip (and the p50 of the first and last tenth of the
# calls: flat over a long session?), and the server's memory growth per 1,000 calls, with the
# ratios (gauntlet / FastMCP; below 1: gauntlet spends less).
#
# usage: benches/peers/mcp.sh [CALLS]      (default 2000)
# needs: python3 with mcp and fastmcp (pip install mcp fastmcp); a release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-2000}
bin=target/release/gauntlet
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

$bin serve examples/incident-desk --case fault-rate-limited --http 127.0.0.1:0 >"$out/serve.json" 2>"$out/serve.err" &
gpid=$!
for _ in $(seq 100); do [ -s "$out/serve.json" ] && break; sleep 0.1; done
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$out/serve.json")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$out/serve.json")
g=$(python3 benches/peers/mcp_calls.py "$url" "$token" "$gpid" "$calls")
kill $gpid

# FastMCP twice: its default (a session per client, SSE answers) and its fastest setting for
# plain calls (stateless, JSON answers), which is how gauntlet serves a trial's world.
fastmcp() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    python3 benches/peers/mcp_fastmcp_server.py "$port" "$1" >"$out/fast-$1.log" 2>&1 &
    fpid=$!
    for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    python3 benches/peers/mcp_calls.py "http://127.0.0.1:$port/mcp" - "$fpid" "$calls"
    kill $fpid
}
f=$(fastmcp sessions)
s=$(fastmcp stateless)

python3 - "$g" "$f" "$s" "$calls" <<'PY'
import json, sys
g, f, s, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
print(f"MCP tool call, official Python client, streamable HTTP, {n} calls in one session")
print("FastMCP: its default (sessions, SSE answers) and stateless with JSON answers; ratio = gauntlet / FastMCP")
print(f"{'':38}{'gauntlet':>10}{'FastMCP':>10}{'ratio':>7}{'stateless':>11}{'ratio':>7}")
for key, label in [("server_cpu_us_per_call", "server CPU per call (µs)"), ("p50_us", "round trip p50 (µs)"),
                   ("p99_us", "round trip p99 (µs)"), ("p50_first_tenth_us", "p50, first tenth of calls (µs)"),
                   ("p50_last_tenth_us", "p50, last tenth of calls (µs)"),
                   ("rss_growth_kib_per_1000_calls", "server RSS growth / 1000 calls (KiB)")]:
    ratio = lambda peer: f"{g[key] / peer[key]:>7.2f}" if peer[key] else f"{'-':>7}"
    print(f"{label:38}{g[key]:>10.0f}{f[key]:>10.0f}{ratio(f)}{s[key]:>11.0f}{ratio(s)}")
PY
