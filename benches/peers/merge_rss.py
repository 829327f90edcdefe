#!/usr/bin/env python3
"""Peak memory of `gauntlet merge` as runs grow: the example suite run in parts
(`run --shard I/N`, scripted agent), then merged, at growing trial counts and part counts.
The merge streams its parts' records: its peak RSS should stay flat while the trials grow
tenfold (it keeps a key and an offset per trial, about 100 bytes, and past 10,000 trials the
summaries wait on disk).

usage: benches/peers/merge_rss.py [TRIALS ...]   (default: 10000 30000 100000)
env:   BIN (default target/release/gauntlet), PARTS (default "4 16"), SUITE (default the example)
"""

import os
import shutil
import subprocess
import sys
import tempfile

from rss import BIN, SUITE, cases, peak_rss_mb


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 30_000, 100_000]
    counts = [int(n) for n in os.environ.get("PARTS", "4 16").split()]
    per_epoch = cases()
    print(f"{'trials':>8} {'parts':>5} {'merge s':>8} {'merge RSS MB':>13} {'trials.jsonl MB':>16}")
    for size in sizes:
        epochs = max(1, size // per_epoch)
        for n in counts:
            work = tempfile.mkdtemp(prefix="gauntlet-merge-bench-")
            try:
                parts = []
                for i in range(1, n + 1):
                    part = os.path.join(work, f"part{i}")
                    code = subprocess.run(
                        [BIN, "run", SUITE, "--agent", "script:reference", "--epochs",
                         str(epochs), "--seed", "1", "--run-id", "bench", "--shard", f"{i}/{n}",
                         "--out", part, "--quiet"],
                        stdout=subprocess.DEVNULL,
                    ).returncode
                    if code != 0:
                        sys.exit(f"part {i}/{n} exited {code}")
                    parts.append(part)
                merged = os.path.join(work, "merged")
                code, took, rss, _ = peak_rss_mb([BIN, "merge", *parts, "--out", merged])
                if code > 1:
                    sys.exit(f"merge exited {code}")
                size_mb = os.path.getsize(os.path.join(merged, "trials.jsonl")) / 1e6
                print(f"{epochs * per_epoch:>8} {n:>5} {took:>8.2f} {rss:>13.1f} {size_mb:>16.1f}",
                      flush=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
