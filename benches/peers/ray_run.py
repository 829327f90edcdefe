#!/usr/bin/env python3
"""`gauntlet.ray.run` against the local runner, on a real local Ray cluster (loopback).

1. Overhead per trial of the Ray path: the example suite with the scripted reference agent,
   `gauntlet.run` against `gauntlet.ray.run` on one node (one CPU), same trials.
2. Throughput on one node against two for an agent that waits on a slow model: a Python agent
   whose every trial waits DELAY seconds (a fixed-delay model), one trial at a time per part,
   one CPU a node.

Needs the wheel installed (pip install ./python) and ray. usage: benches/peers/ray_run.py
env: EPOCHS (default 20), SLOW_EPOCHS (default 2), DELAY (default 0.2)
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import gauntlet
import gauntlet.ray

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, "examples", "incident-desk")
EPOCHS = int(os.environ.get("EPOCHS", "20"))
SLOW_EPOCHS = int(os.environ.get("SLOW_EPOCHS", "2"))
DELAY = float(os.environ.get("DELAY", "0.2"))
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args):
    env = dict(os.environ, PYTHONPATH=HERE, RAY_USAGE_STATS_ENABLED="0", SLOW_AGENT_DELAY=str(DELAY))
    return subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats",
         "--node-ip-address", "127.0.0.1", "--num-cpus", "1", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_nodes(address, n):
    import ray

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(address.split(":"), timeout=1).close()
            ray.init(address=address, logging_level="ERROR")
            alive = sum(node["Alive"] for node in ray.nodes())
            ray.shutdown()
            if alive >= n:
                return
        except Exception:
            pass
        time.sleep(1)
    sys.exit(f"the cluster did not reach {n} nodes")


def timed(f):
    t0 = time.perf_counter()
    r = f()
    return r, time.perf_counter() - t0


def main():
    sys.path.insert(0, HERE)
    from ray_slow_agent import slow_agent

    work = tempfile.mkdtemp(prefix="gauntlet-ray-bench-")
    suite = os.path.join(work, "suite")
    shutil.copytree(SUITE, suite, ignore=shutil.ignore_patterns(".gauntlet"))
    port = free_port()
    address = f"127.0.0.1:{port}"
    head = start(["--head", "--port", str(port), "--include-dashboard=false"])
    nodes = [head]
    try:
        wait_nodes(address, 1)
        # 1. Overhead per trial, scripted agent, one node.
        local, t_local = timed(lambda: gauntlet.run(
            suite, agent="script:reference", epochs=EPOCHS, seed=1, concurrency=1,
            out=os.path.join(work, "local")))
        spread, t_ray = timed(lambda: gauntlet.ray.run(
            suite, agent="script:reference", epochs=EPOCHS, seed=1, concurrency=1,
            address=address, out=os.path.join(work, "ray1")))
        n = int(local.metrics["trials"])
        assert int(spread.metrics["trials"]) == n
        print(f"scripted agent, {n} trials, one node: local {t_local:.2f} s "
              f"({n / t_local:.0f} trials/s), ray {t_ray:.2f} s ({n / t_ray:.0f} trials/s); "
              f"overhead {(t_ray - t_local) / n * 1000:.2f} ms a trial (ray/local {t_ray / t_local:.2f})")
        # 2. Slow model: one node, then two.
        rates = []
        for nodes_wanted in (1, 2):
            if nodes_wanted == 2:
                nodes.append(start(["--address", address]))
                wait_nodes(address, 2)
            r, t = timed(lambda: gauntlet.ray.run(
                suite, agent=slow_agent, epochs=SLOW_EPOCHS, seed=1, concurrency=1,
                address=address, out=os.path.join(work, f"slow{nodes_wanted}")))
            m = int(r.metrics["trials"])
            rates.append(m / t)
            print(f"agent waiting {DELAY:.2f} s a trial, {m} trials, {nodes_wanted} node(s): "
                  f"{t:.2f} s, {m / t:.2f} trials/s")
        print(f"two nodes / one node: {rates[1] / rates[0]:.2f}x")
    finally:
        for p in reversed(nodes):
            stop(p)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
