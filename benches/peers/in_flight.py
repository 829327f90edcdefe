#!/usr/bin/env python3
"""Trials in flight against a slow model: the built-in `openai:` agent, through gauntlet's LLM
gateway, against a local OpenAI-compatible upstream that answers every call after a fixed delay
(1 s): two tool calls then an answer, three model calls a trial. At concurrency C the best a
harness can do is C / (3 × delay) trials a second; what gauntlet sustains, its peak RSS and its
errors are printed.

usage: benches/peers/in_flight.py [CONCURRENCY] [TRIALS]   (default 256 and 2300)
env:   BIN (default target/release/gauntlet), DELAY (default 1.0 s)
"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release", "gauntlet"))
SUITE = os.path.join(ROOT, "examples", "incident-desk")
DELAY = float(os.environ.get("DELAY", "1.0"))
CONCURRENCY = int(sys.argv[1]) if len(sys.argv) > 1 else 256
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 2300

calls = {"n": 0, "max_open": 0, "open": 0}
lock = threading.Lock()


class Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with lock:
            calls["n"] += 1
            calls["open"] += 1
            calls["max_open"] = max(calls["max_open"], calls["open"])
        time.sleep(DELAY)
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
        text = " ".join(str(m.get("content") or "") for m in body.get("messages", []))
        incident = (re.findall(r"INC-\d{6}", text) or ["INC-004217"])[0]
        if done < 2 and "get_incident" in tools:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{done}", "type": "function",
                "function": {"name": "get_incident", "arguments": json.dumps({"incident_id": incident})}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"{incident} is open."}
            finish = "stop"
        out = json.dumps({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        with lock:
            calls["open"] -= 1


def main():
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}/v1"
    cases = 23
    epochs = -(-TRIALS // cases)
    work = tempfile.mkdtemp(prefix="in-flight-")
    try:
        out = os.path.join(work, "run")
        t0 = time.perf_counter()
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", BIN, "run", SUITE, "--agent", "openai:bench-model",
             "--gateway-upstream", upstream, "--concurrency", str(CONCURRENCY), "--epochs", str(epochs),
             "--out", out, "--quiet"],
            capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rss_kb, user, system = p.stderr.strip().splitlines()[-1].split()
        results = json.load(open(os.path.join(out, "results.json")))
        m = results["metrics"]
        n = int(m["trials"])
        ideal = CONCURRENCY / (3 * DELAY)
        print(f"{n} trials at concurrency {CONCURRENCY}, {DELAY:.1f} s a model call: {wall:.1f} s, "
              f"{n / wall:.1f} trials/s (at most {ideal:.1f}), {calls['n']} model calls "
              f"({calls['n'] / n:.2f} a trial), at most {calls['max_open']} calls open at once")
        print(f"gauntlet: peak RSS {int(rss_kb) / 1024:.0f} MB, CPU {float(user) + float(system):.1f} s, "
              f"harness errors {int(m['errors'])}, exit {p.returncode}")
        if int(m["errors"]):
            first = next(t for t in results["trials"] if t["status"] == "error")
            print("first error:", first.get("error", "")[:300])
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
