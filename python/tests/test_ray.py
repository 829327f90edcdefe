"""`gauntlet.ray.run` on a real local Ray cluster: a head and a second node joined to it, both on
loopback, started with Ray's own `ray start` from this environment (so its workers import the
gauntlet under test)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

ray = pytest.importorskip("ray", reason="needs the ray package (pip install ray)")

import gauntlet  # noqa: E402
import gauntlet.ray  # noqa: E402
from conftest import EXAMPLES  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TIMED = ("latency", "time_lost", "duration")


def untimed(metrics):
    return {k: v for k, v in metrics.items() if not any(t in k for t in TIMED)}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_start(args, log, marks):
    """`ray start ... --block` in a process group of its own: killing the group stops that node
    (its raylet and workers) and nothing else."""
    env = dict(
        os.environ,
        # The workers import the test agents from here.
        PYTHONPATH=os.pathsep.join([HERE, str(EXAMPLES / "agents")]),
        RAY_USAGE_STATS_ENABLED="0",
        # Where the slow agent marks the trials it starts on this node.
        GAUNTLET_TEST_MARKERS=str(marks),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--block",
         "--disable-usage-stats", "--node-ip-address", "127.0.0.1", *args],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )


def _stop(proc):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            if sig == signal.SIGTERM:
                time.sleep(1)
        except subprocess.TimeoutExpired:
            pass


def _alive_nodes(address):
    try:
        out = subprocess.run(
            [sys.executable, "-c",
             "import json, ray; ray.init(address=%r, logging_level='ERROR');"
             "print(json.dumps(sum(n['Alive'] for n in ray.nodes())))" % address],
            capture_output=True, text=True, timeout=30,
        )
    except subprocess.TimeoutExpired:
        return 0
    return int(out.stdout.strip() or 0) if out.returncode == 0 else 0


def _listening(address):
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def _wait_nodes(address, n, procs, logs):
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if _listening(address) and _alive_nodes(address) >= n:
            return
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(1)
    text = "\n".join(open(log.name).read()[-3000:] for log in logs)
    pytest.fail(f"the local Ray cluster did not come up with {n} nodes:\n{text}")


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """A Ray head node on loopback, one CPU."""
    logs = tmp_path_factory.mktemp("ray")
    port = _free_port()
    log = open(logs / "head.log", "w")
    (logs / "head").mkdir()
    proc = _ray_start(
        ["--head", "--port", str(port), "--num-cpus", "1", "--include-dashboard=false"],
        log,
        logs / "head",
    )
    address = f"127.0.0.1:{port}"
    try:
        _wait_nodes(address, 1, [proc], [log])
        yield address, logs
    finally:
        _stop(proc)


def _join(head, name):
    address, logs = head
    log = open(logs / f"{name}.log", "w")
    (logs / name).mkdir()
    proc = _ray_start(["--address", address, "--num-cpus", "1"], log, logs / name)
    return proc, log


@pytest.fixture
def cluster(head):
    """The head and a second node joined to it: two nodes, a CPU each."""
    proc, log = _join(head, "worker")
    try:
        _wait_nodes(head[0], 2, [proc], [log])
        yield head[0]
    finally:
        _stop(proc)


def test_a_run_over_the_cluster_equals_the_local_run(cluster, suite, tmp_path):
    spread = gauntlet.ray.run(
        suite, agent="script:reference", epochs=3, seed=7, run_id="ray-eq", parts=8,
        address=cluster, out=tmp_path / "spread",
    )
    local = gauntlet.run(
        suite, agent="script:reference", epochs=3, seed=7, run_id="ray-eq",
        out=tmp_path / "local",
    )
    assert spread.metrics["trials"] == local.metrics["trials"] == 69
    assert spread.verdict == local.verdict
    assert [g.passed for g in spread.gates] == [g.passed for g in local.gates]
    assert untimed(spread.metrics) == untimed(local.metrics)
    key = lambda r: [(t["case_id"], t["epoch"], t["status"], t["trace_id"])
                     for t in r.raw["trials"]]
    assert key(spread) == key(local)
    # An ordinary run folder: every (case, epoch) once, read back as any stored run.
    stored = [(t.case_id, t.epoch) for t in spread.iter_trials()]
    assert sorted(stored) == sorted(set(stored)) and len(stored) == 69
    assert gauntlet.load_run(spread.run_dir).metrics == spread.metrics
    # Nothing of the parts is left beside it.
    assert sorted(os.listdir(tmp_path)) == ["incident-desk", "local", "spread"]


def test_a_node_killed_mid_run_costs_nothing(head, suite, tmp_path):
    proc, log = _join(head, "doomed")
    try:
        _wait_nodes(head[0], 2, [proc], [log])
        from incident_agent import agent as incident_agent
        from slow_agents import slow_incident_agent

        done = []
        box = {}

        def work():
            try:
                box["results"] = gauntlet.ray.run(
                    suite, agent=slow_incident_agent, epochs=2, seed=3, parts=8,
                    concurrency=1, address=head[0], out=tmp_path / "run",
                    on_part=lambda n, total: done.append((n, total)),
                )
            except BaseException as e:  # handed to the test's thread
                box["error"] = e

        t = threading.Thread(target=work)
        t.start()
        # Kill the second node while it plays a part: once a part came back, as soon as the
        # node starts another trial (each takes half a second).
        marks = head[1] / "doomed"
        deadline = time.monotonic() + 120
        while not done and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done, f"no part came back: {box}"
        seen = len(os.listdir(marks))
        while len(os.listdir(marks)) == seen and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert t.is_alive(), "the run ended before the node could be killed"
        _stop(proc)
        t.join(timeout=300)
        assert not t.is_alive(), "the run did not finish after the node died"
    finally:
        _stop(proc)
    assert "error" not in box, box.get("error")
    results = box["results"]
    assert done[-1] == (8, 8)
    stored = [(t.case_id, t.epoch) for t in results.iter_trials()]
    assert len(stored) == len(set(stored)) == 46
    assert results.metrics["trials"] == 46
    local = gauntlet.run(suite, agent=incident_agent, epochs=2, seed=3, out=tmp_path / "local")
    # The killed node had trials under way, and those were played again on the head.
    trials_on = lambda node: {m.rsplit("@", 1)[0] for m in os.listdir(head[1] / node)}
    again = trials_on("doomed") & trials_on("head")
    assert again, (trials_on("doomed"), trials_on("head"))
    assert untimed(results.metrics) == untimed(local.metrics)


def test_an_invalid_suite_is_refused_before_the_cluster_is_touched(tmp_path):
    (tmp_path / "gauntlet.yaml").write_text("name: [unclosed\n")
    with pytest.raises(gauntlet.InvalidInputError) as e:
        gauntlet.ray.run(tmp_path, agent="script:reference", address="127.0.0.1:1")
    assert "gauntlet.yaml" in str(e.value)
    assert not ray.is_initialized()
