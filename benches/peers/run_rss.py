#!/usr/bin/env python3
"""Peak memory of `gauntlet run` as runs grow: the example suite with the scripted reference
agent at growing trial counts. Trials are made as slots free up and their summaries are tallied
in plan order, waiting on disk past 10,000: peak RSS should stay flat while the trials grow a
hundredfold. Prints a row per size, then the ratio of the largest run's RSS to the smallest's.

usage: benches/peers/run_rss.py [TRIALS ...]   (default: 10000 100000 1000000)
env:   BIN (default target/release/gauntlet), SUITE (default the example), CONCURRENCY (8)
"""

import os
import shutil
import sys
import tempfile

from rss import BIN, SUITE, cases, peak_rss_mb

CONCURRENCY = os.environ.get("CONCURRENCY", "8")


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
