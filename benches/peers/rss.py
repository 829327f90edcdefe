"""What the peak-memory benches share (`merge_rss.py`, `run_rss.py`): the gauntlet binary and
suite they use, the trials in one epoch of it, and a command's peak RSS."""

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target", "release", "gauntlet"))
SUITE = os.environ.get("SUITE", os.path.join(ROOT, "examples", "incident-desk"))


def cases() -> int:
    """Trials in one epoch of the suite (one run of it)."""
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
