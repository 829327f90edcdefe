#!/usr/bin/env python3
"""Peak memory of `gauntlet run` as runs grow: the example suite with the scripted reference
agent at growing trial counts. Trials are made as slots free up and their summaries are tallied
in plan order, waiting on disk past 10,000: peak RSS should stay flat while the trials grow a
hundredfold. Prints a row per size, then the ratio of the largest run's RSS to the smallest's.

usage: benches/peers/run_rss.py [TRIALS ...]   (default: 10000 100000 1000000)
env:   BIN (default target/release/gauntlet), SUITE (default the example), CONCURRENCY (8)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release", "gauntlet"))
SUITE = os.environ.get("SUITE", os.path.join(ROOT, "examples", "incident-desk"))
CONCURRENCY = os.environ.get("CONCURRENCY", "8")


def cases() -> int:
    """Trials in one epoch of the suite."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [BIN, "run", SUITE, "--agent", "script:reference", "--out", tmp + "/r", "--json"],
            capture_output=True, text=True,
        )
        if out.returncode > 1:
            sys.exit(f"gauntlet run failed: {out.stderr}")
        return int(json.loads(out.stdout)["metrics"]["trials"])


def peak_rss_mb(argv: list) -> tuple:
    """Runs argv under /usr/bin/time -v: (exit code, seconds, peak RSS in MB, stderr)."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-v"] + argv, capture_output=True, text=True)
    took = time.monotonic() - t0
    rss = next(
        int(line.split(":")[1]) for line in p.stderr.splitlines() if "Maximum resident" in line
    )
    return p.returncode, took, rss / 1024, p.stderr


def mb(path: str) -> float:
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else 0.0


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
    per_epoch = cases()
    print(f"{'trials':>9} {'run s':>8} {'RSS MB':>8} {'trials.jsonl MB':>16} {'results.json MB':>16}",
          flush=True)
    rows = []
    for size in sizes:
        epochs = max(1, size // per_epoch)
        work = tempfile.mkdtemp(prefix="gauntlet-run-bench-")
        out = os.path.join(work, "run")
        try:
            code, took, rss, err = peak_rss_mb([
                BIN, "run", SUITE, "--agent", "script:reference", "--epochs", str(epochs),
                "--concurrency", CONCURRENCY, "--out", out, "--quiet",
            ])
            if code > 1:
                sys.exit(f"gauntlet run exited {code}: {err[-2000:]}")
            trials = epochs * per_epoch
            rows.append((trials, rss))
            print(f"{trials:>9} {took:>8.1f} {rss:>8.0f} {mb(os.path.join(out, 'trials.jsonl')):>16.0f} "
                  f"{mb(os.path.join(out, 'results.json')):>16.0f}", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if len(rows) > 1:
        (n0, r0), (n1, r1) = rows[0], rows[-1]
        print(f"RSS at {n1} trials / RSS at {n0} trials: {r1 / r0:.2f}x for {n1 / n0:.0f}x the trials")


if __name__ == "__main__":
    main()
