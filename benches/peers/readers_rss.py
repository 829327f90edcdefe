#!/usr/bin/env python3
"""Peak memory and wall time of every command that reads a stored run, as runs grow: the example
suite with the scripted reference agent at growing trial counts (two runs per size, A and B, for
`compare`). Each reader should stay flat while the trials grow a hundredfold (issue #51). Prints
a row per reader and size, then, per reader, the ratio of the largest run's RSS to the smallest's.

usage: benches/peers/readers_rss.py [TRIALS ...]   (default: 10000 100000)
env:   BIN (default target/release/gauntlet), SUITE (default the example), CONCURRENCY (8),
       READERS (comma-separated names to run, default all), KEEP (a folder to keep the runs in)
"""

import os
import shutil
import subprocess
import sys
import tempfile

from rss import BIN, SUITE, cases, peak_rss_mb

CONCURRENCY = os.environ.get("CONCURRENCY", "8")


def readers(a: str, b: str, work: str) -> list:
    """(name, argv) of each reader of run `b` (`a` is the baseline of compare)."""
    out = lambda name: os.path.join(work, name)  # noqa: E731
    gates = os.path.join(SUITE, "gauntlet.yaml")
    py = ("import gauntlet, sys; r = gauntlet.load_run(sys.argv[1]); "
          "n = sum(1 for _ in r.iter_trials()); print(n)")
    return [
        ("gate", [BIN, "gate", b, "--gates", gates, "-q"]),
        ("compare --json", [BIN, "compare", a, b, "--json"]),
        ("export", [BIN, "export", b, "--out", out("traces.jsonl")]),
        ("import otlp", [BIN, "import", "otlp", out("traces.jsonl"), "--out", out("imported")]),
        ("report html", [BIN, "report", b, "--format", "html", "--out", out("r.html")]),
        ("report md", [BIN, "report", b, "--format", "md", "--out", out("r.md")]),
        ("report junit", [BIN, "report", b, "--format", "junit", "--out", out("r.xml")]),
        ("report json", [BIN, "report", b, "--format", "json", "--out", out("r.json")]),
        ("report terminal", [BIN, "report", b, "--format", "terminal", "--out", out("r.txt")]),
        ("report events", [BIN, "report", b, "--format", "events", "--out", out("r.jsonl")]),
        ("python load_run", [sys.executable, "-c", py, b]),
    ]


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    only = {r for r in os.environ.get("READERS", "").split(",") if r}
    per_epoch = cases()
    has_python = subprocess.run([sys.executable, "-c", "import gauntlet"],
                                capture_output=True).returncode == 0
    print(f"{'reader':<18} {'trials':>9} {'s':>8} {'RSS MB':>8}", flush=True)
    by_reader = {}
    for size in sizes:
        epochs = max(1, size // per_epoch)
        work = os.environ.get("KEEP") or tempfile.mkdtemp(prefix="gauntlet-readers-bench-")
        os.makedirs(work, exist_ok=True)
        trials = epochs * per_epoch
        runs = [os.path.join(work, f"{name}-{trials}") for name in ("a", "b")]
        try:
            for run in runs:
                if os.path.exists(os.path.join(run, "results.json")):
                    continue
                shutil.rmtree(run, ignore_errors=True)
                code, took, rss, err = peak_rss_mb([
                    BIN, "run", SUITE, "--agent", "script:reference", "--epochs", str(epochs),
                    "--concurrency", CONCURRENCY, "--out", run, "--quiet",
                ])
                if code > 1:
                    sys.exit(f"gauntlet run exited {code}: {err[-2000:]}")
                print(f"{'(run)':<18} {trials:>9} {took:>8.1f} {rss:>8.0f}", flush=True)
            scratch = tempfile.mkdtemp(prefix="out-", dir=work)
            for name, argv in readers(runs[0], runs[1], scratch):
                if only and name not in only:
                    continue
                if name.startswith("python") and not has_python:
                    print(f"{name:<18} {trials:>9} {'(gauntlet not importable)':>17}", flush=True)
                    continue
                code, took, rss, err = peak_rss_mb(argv)
                note = "" if code <= 1 else f"  exit {code}: {err.strip().splitlines()[-1][:100]}"
                print(f"{name:<18} {trials:>9} {took:>8.2f} {rss:>8.0f}{note}", flush=True)
                by_reader.setdefault(name, []).append((trials, rss))
            shutil.rmtree(scratch, ignore_errors=True)
        finally:
            if not os.environ.get("KEEP"):
                shutil.rmtree(work, ignore_errors=True)
    for name, rows in by_reader.items():
        if len(rows) > 1:
            (n0, r0), (n1, r1) = rows[0], rows[-1]
            print(f"{name}: RSS {r1 / r0:.2f}x for {n1 / n0:.0f}x the trials")


if __name__ == "__main__":
    main()
