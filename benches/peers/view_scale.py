#!/usr/bin/env python3
"""`gauntlet view` and the HTML report at any run size: a run of TRIALS trials is generated from
a real run of the example suite (its records repeated over epochs, its summaries.jsonl's summaries
likewise), then the viewer is timed as a person meets it, cold (nothing indexed yet) and warm
(the index kept beside the run from the first open):

  first page   GET /api/runs, GET /api/runs/ID and the first page of trials, in turn
  last trial   the trajectory of the run's last trial
  filter       the failed trials, page 1, and a text search
  RSS          the server's peak resident memory (VmHWM) after all of that

and `gauntlet report RUN --format html` is measured for its file size.

usage: benches/peers/view_scale.py [TRIALS]   (default 100000)
env:   BIN (default target/release/gauntlet), KEEP=1 keeps the generated run (and prints where),
       WORK=DIR reuses a run kept so (its viewer caches removed first)
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release", "gauntlet"))
SUITE = os.path.join(ROOT, "examples", "incident-desk")
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000


def generate(work: str) -> str:
    """A run folder of TRIALS trials: a real run's records and summaries over many epochs."""
    seed_run = os.path.join(work, "seed")
    subprocess.run([BIN, "run", SUITE, "--agent", "script:naive", "--out", seed_run, "--quiet"],
                   check=False, capture_output=True)
    header = json.load(open(os.path.join(seed_run, "run.json")))
    results = json.load(open(os.path.join(seed_run, "results.json")))
    lines = [l for l in open(os.path.join(seed_run, "trials.jsonl")) if l.strip()]
    cases = len(lines)
    epochs = -(-TRIALS // cases)
    big = os.path.join(work, "runs", "big")
    os.makedirs(big)
    header["run_id"] = "big-" + str(TRIALS)
    header["epochs"] = epochs
    json.dump(header, open(os.path.join(big, "run.json"), "w"))
    if os.path.isdir(os.path.join(seed_run, "states")):
        shutil.copytree(os.path.join(seed_run, "states"), os.path.join(big, "states"))
    epoch = re.compile(r'"epoch":0\b')
    n = 0
    with open(os.path.join(big, "trials.jsonl"), "w") as out:
        for e in range(epochs):
            for line in lines:
                if n == TRIALS:
                    break
                out.write(epoch.sub(f'"epoch":{e}', line, count=1))
                n += 1
    summaries = [json.loads(l) for l in open(os.path.join(seed_run, "summaries.jsonl")) if l.strip()]
    n = 0
    with open(os.path.join(big, "summaries.jsonl"), "w") as out:
        for e in range(epochs):
            for s in summaries:
                if n == TRIALS:
                    break
                out.write(json.dumps(dict(s, epoch=e)) + "\n")
                n += 1
    results["header"] = header
    json.dump(results, open(os.path.join(big, "results.json"), "w"))
    return big


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def session(root: str, run_id: str, last: tuple) -> dict:
    proc = subprocess.Popen([BIN, "view", root, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = json.loads(proc.stdout.readline())
    base, token = line["url"].split("/?")[0], line["token"]

    def get(path):
        req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as r:
            body = json.loads(r.read())
        return body, time.perf_counter() - t0

    out = {}
    try:
        _, a = get("/api/runs")
        _, b = get(f"/api/runs/{run_id}")
        page, c = get(f"/api/runs/{run_id}/trials?offset=0&limit=50")
        out["first_page_s"] = a + b + c
        out["runs_s"], out["run_s"], out["trials_page_s"] = a, b, c
        out["total"] = page["total"]
        _, out["last_trial_s"] = get(f"/api/runs/{run_id}/trial?case={last[0]}&epoch={last[1]}")
        _, out["failed_filter_s"] = get(f"/api/runs/{run_id}/trials?status=failed&offset=5000&limit=50")
        _, out["search_s"] = get(f"/api/runs/{run_id}/trials?q=incident&limit=50")
        out["rss_mb"] = rss_kb(proc.pid) / 1024
    finally:
        proc.terminate()
        proc.wait()
    return out


def main():
    reuse = os.environ.get("WORK")
    work = reuse or tempfile.mkdtemp(prefix="view-scale-")
    try:
        t0 = time.perf_counter()
        if reuse:
            big = os.path.join(work, "runs", "big")
            for cache in ("view-index.json", "view-summary.json"):
                if os.path.exists(os.path.join(big, cache)):
                    os.remove(os.path.join(big, cache))
        else:
            big = generate(work)
        size = os.path.getsize(os.path.join(big, "trials.jsonl"))
        print(f"generated {TRIALS} trials in {time.perf_counter() - t0:.1f} s: trials.jsonl "
              f"{size / 1e6:.0f} MB, results.json "
              f"{os.path.getsize(os.path.join(big, 'results.json')) / 1e6:.0f} MB")
        last_line = open(os.path.join(big, "trials.jsonl")).readlines()[-1]
        rec = json.loads(last_line)
        last = (rec["case_id"], rec["epoch"])
        run_id = "big-" + str(TRIALS)
        for label in ("cold", "warm"):
            r = session(os.path.join(work, "runs"), run_id, last)
            print(f"{label}: first page {r['first_page_s']:.2f} s (runs {r['runs_s']:.2f}, run "
                  f"{r['run_s']:.2f}, trials {r['trials_page_s']:.3f}), last trial "
                  f"{r['last_trial_s'] * 1000:.1f} ms, failed filter {r['failed_filter_s'] * 1000:.1f} ms, "
                  f"search {r['search_s'] * 1000:.1f} ms, server peak RSS {r['rss_mb']:.0f} MB "
                  f"({r['total']} trials)")
        html = os.path.join(work, "report.html")
        t0 = time.perf_counter()
        subprocess.run([BIN, "report", big, "--format", "html", "--out", html], check=True)
        print(f"report.html at {TRIALS} trials: {os.path.getsize(html) / 1e6:.1f} MB "
              f"in {time.perf_counter() - t0:.1f} s")
    finally:
        if os.environ.get("KEEP") != "1" and not reuse:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)


if __name__ == "__main__":
    main()
