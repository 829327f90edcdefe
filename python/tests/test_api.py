"""`gauntlet.run` and friends, as a Python user calls them."""

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import pytest

import gauntlet
from conftest import EXAMPLES
from incident_agent import agent as incident_agent

# Metrics that measure wall time: an agent in another process takes longer by nature.
TIMED = ("latency", "time_lost")


def untimed(metrics):
    return {k: v for k, v in metrics.items() if not any(t in k for t in TIMED)}


def test_a_python_agent_scores_as_the_same_agent_over_mcp(suite, tmp_path):
    # One epoch: each trial over MCP starts a Python process that imports the mcp package
    # (about a second of CPU each).
    inproc = gauntlet.run(suite, agent=incident_agent, seed=7, out=tmp_path / "a")
    adapter = EXAMPLES / "agents" / "mcp_adapter.py"
    target = f"{EXAMPLES / 'agents' / 'incident_agent.py'}:agent"
    over_mcp = gauntlet.run(
        suite, agent=f"cmd:{sys.executable} {adapter} {target}", seed=7,
        out=tmp_path / "b",
    )
    assert inproc.metrics["trials"] == 23
    assert inproc.verdict == over_mcp.verdict
    assert untimed(inproc.metrics) == untimed(over_mcp.metrics)
    status = lambda r: [(t.case_id, t.epoch, t.status) for t in r.trials]
    assert status(inproc) == status(over_mcp)
    # The rules know incidents only: some cases pass, some do not.
    assert 0 < inproc.metrics["pass_rate"] < 1
    assert inproc.agent == "python:incident_agent:agent"


def test_results_carry_verdict_metrics_gates_and_trials(suite):
    results = gauntlet.run(suite, agent="script:reference")
    assert results.verdict == "passed" and results.exit_code == 0
    assert results.metrics["pass_rate"] == 1.0
    assert results.metrics["task_success_rate"] == 1.0
    assert {g.name for g in results.gates} >= {"no harness errors", "task success"}
    assert all(g.passed for g in results.gates)
    assert len(results.trials) == 23
    trial = results.trials[0]
    assert trial.case_id and trial.epoch == 0 and trial.status == "passed"
    assert trial.scores and trial.trajectory["events"] and trial.final_state is not None
    assert results.run_dir.is_dir() and (results.run_dir / "trials.jsonl").is_file()
    again = gauntlet.load_run(results.run_dir)
    assert again.metrics == results.metrics and again.verdict == "passed"
    assert [t.case_id for t in again.trials] == [t.case_id for t in results.trials]


def test_a_run_too_large_to_hold_lists_every_trial_in_plan_order(suite, tmp_path):
    # Past 1,000 trials the run keeps its summaries on disk; the results still list them all.
    big = gauntlet.run(suite, agent="script:reference", epochs=50, concurrency=8,
                       out=tmp_path / "big")
    assert big.metrics["trials"] == 1150 and len(big.raw["trials"]) == 1150
    keys = [(t["case_id"], t["epoch"]) for t in big.raw["trials"]]
    cases = list(dict.fromkeys(c for c, _ in keys))
    assert keys == [(c, e) for c in cases for e in range(50)], "plan order: each case's epochs"
    assert [(t.case_id, t.epoch) for t in big.trials] == keys
    assert not list((tmp_path / "big").glob(".summaries-*")), "the spill file is gone"


def test_tool_calls_land_in_the_trajectory_with_errors_and_keys(suite):
    seen = {}

    def agent(case, tools, user):
        if case.case_id != "close-mitigated":
            return "skip"
        names = [t["name"] for t in tools.list()]
        seen["tools"] = names
        try:
            tools.call("get_incident", incident_id="INC-999999")
        except gauntlet.ToolError as e:
            seen["error"] = (e.status, e.message)
        got = tools.call_with("get_incident", {"incident_id": "INC-004217"}, idempotency_key="k-1")
        seen["status"] = got["status"]
        seen["approved"] = user.confirm("Close INC-004217?")
        tools.call("close_incident", incident_id="INC-004217")
        return "INC-004217 is closed."

    results = gauntlet.run(suite, agent=agent, filter="close-mitigated")
    assert "get_incident" in seen["tools"] and "close_incident" in seen["tools"]
    assert seen["error"][0] == 404 and "INC-999999" in seen["error"][1]
    assert seen["status"] == "mitigated" and seen["approved"] is True
    trial = results.trials[0]
    assert trial.status == "passed", trial.failed_evaluators
    calls = [e for e in trial.events if e["type"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["get_incident", "get_incident", "close_incident"]
    assert calls[0]["error"]["status"] == 404
    assert calls[0]["arguments"] == {"incident_id": "INC-999999"}
    assert calls[1].get("idempotency_key") == "k-1"
    assert all("latency_ms" in c for c in calls)
    assert any(e["type"] == "confirmation_request" for e in trial.events)
    assert trial.final_answer == "INC-004217 is closed."
    assert trial.final_state["incidents"]["INC-004217"]["status"] == "closed"


def crash_of(trial):
    """The trial's `agent_completed` score (the agent crashed), or None."""
    return next((s for s in trial["scores"] if s["name"] == "agent_completed"), None)


# Issue 47, item 8: an agent that raised was a harness error, the status of a world that could
# not start; the crash is the agent's failure.
def test_an_agent_that_raises_fails_its_trial_naming_the_exception_and_its_line(suite):
    def agent(case, tools, user):
        return undefined_name  # noqa: F821

    results = gauntlet.run(suite, agent=agent)
    assert results.verdict == "failed" and results.exit_code == 1
    assert not results.errors
    for trial in results.raw["trials"]:
        assert trial["status"] == "failed" and "error" not in trial
        crash = crash_of(trial)
        assert crash and not crash["passed"] and crash["severity"] == "error"
        assert "NameError" in crash["reason"] and "test_api.py" in crash["reason"]


def test_an_agent_that_raises_on_an_injected_429_failed_its_trial(suite):
    def agent(case, tools, user):
        # The injected 429 hits the first call; the agent does not handle it.
        tools.call("list_incidents", status="open")
        return "unreachable"

    results = gauntlet.run(suite, agent=agent, filter="fault-rate-limited")
    trial = results.raw["trials"][0]
    assert trial["status"] == "failed", trial.get("error")
    crash = crash_of(trial)
    assert crash and "ToolError" in crash["reason"], trial["scores"]


def test_an_agent_returning_no_string_is_told_so(suite):
    results = gauntlet.run(suite, agent=lambda case, tools, user: 42, filter="close-mitigated")
    trial = results.raw["trials"][0]
    assert trial["status"] == "failed"
    assert "returned int" in crash_of(trial)["reason"]


def test_retry_errors_replays_an_errored_trial(suite, tmp_path):
    # The first attempt dies before it reaches the world: the harness could not start it.
    marker = tmp_path / "tried"
    agent = f"cmd:[ -e {marker} ] || {{ touch {marker}; exit 1; }}; echo done"
    # The marker lives outside the agent's sandbox (where bubblewrap makes the host read-only).
    results = gauntlet.run(
        suite, agent=agent, filter="lookup-status", retry_errors=1, isolation="none"
    )
    assert results.retried == 1 and results.raw["retried"] == 1
    assert results.trials[0].status != "error"
    record = next(iter(results.iter_trials())).record
    assert len(record["retried_errors"]) == 1 and "exit status: 1" in record["retried_errors"][0]
    marker.unlink()
    once = gauntlet.run(suite, agent=agent, filter="lookup-status", isolation="none")
    assert once.retried == 0 and once.trials[0].status == "error"


# Issue 47, item 10: pytest took python:MODULE:FUNCTION, run records said python:module.function
# and `gauntlet run --agent` took no python: form.
def test_a_python_agent_has_one_spelling_everywhere(suite, tmp_path, monkeypatch):
    (tmp_path / "desk_agent.py").write_text(
        "def agent(case, tools, user):\n    return 'nothing to do'\n"
    )
    monkeypatch.chdir(tmp_path)
    by_name = gauntlet.run(suite, agent="python:desk_agent:agent", filter="lookup-status",
                           out=tmp_path / "a")
    assert by_name.agent == "python:desk_agent:agent"
    assert by_name.trials[0].status != "error"
    import desk_agent

    given = gauntlet.run(suite, agent=desk_agent.agent, filter="lookup-status",
                         out=tmp_path / "b")
    assert given.agent == "python:desk_agent:agent"
    # The package's command runs the same spelling, the module found from the current folder.
    code = gauntlet._native.cli(["run", str(suite), "--agent", "python:desk_agent:agent",
                                 "--filter", "lookup-status", "--out", str(tmp_path / "c"),
                                 "--quiet"])
    assert code in (0, 1)
    assert gauntlet.load_run(tmp_path / "c").agent == "python:desk_agent:agent"
    with pytest.raises(gauntlet.InvalidInputError, match="no_such_module"):
        gauntlet.run(suite, agent="python:no_such_module:agent")


def test_coroutine_agents_and_threads_run_side_by_side(suite):
    inside = []
    lock = threading.Lock()

    async def agent(case, tools, user):
        with lock:
            inside.append(1)
            peak = len(inside)
        await asyncio.sleep(0.05)
        with lock:
            inside.pop()
        return f"peak {peak}"

    started = time.monotonic()
    results = gauntlet.run(suite, agent=agent, concurrency=8)
    assert len(results.trials) == 23
    peaks = [int(t.final_answer.split()[1]) for t in results.trials]
    assert max(peaks) > 1, "trials ran one at a time"
    # 23 trials of 50 ms each, 8 at a time: well under their 1.15 s back to back.
    assert time.monotonic() - started < 60


def test_a_hanging_agent_is_interrupted_at_the_trial_timeout(suite):
    def agent(case, tools, user):
        while True:
            pass

    results = gauntlet.run(suite, agent=agent, filter="close-mitigated", trial_timeout=1)
    trial = results.raw["trials"][0]
    assert trial["status"] == "error"
    assert "time" in trial["error"].lower()


def test_events_stream_live(suite):
    events = []
    results = gauntlet.run(suite, agent="script:reference", filter="close", on_event=events.append)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "trial_started" in kinds and "tool_call" in kinds and "verdict" in kinds
    assert kinds.count("trial_finished") == len(results.trials)
    s = gauntlet.stream(suite, agent="script:reference", filter="close", trial_events=False)
    streamed = [e["type"] for e in s]
    assert "tool_call" not in streamed and streamed[-1] == "run_finished"
    assert s.results is not None and s.results.verdict == "passed"


def test_an_exception_in_the_event_callback_is_raised_after_the_run(suite):
    def boom(event):
        raise RuntimeError("callback broke")

    with pytest.raises(RuntimeError, match="callback broke"):
        gauntlet.run(suite, agent="script:reference", filter="close", on_event=boom)


def test_check_gives_diagnostics_as_objects(suite):
    assert gauntlet.check(suite) == []
    case = next((suite / "cases").rglob("*.yaml"))
    case.write_text(case.read_text().replace("user_input:", "user_inptu:", 1))
    problems = gauntlet.check(suite)
    assert problems and problems[0].file.endswith(case.name) and problems[0].line > 0
    assert "user_inptu" in problems[0].message
    with pytest.raises(gauntlet.InvalidInputError) as e:
        gauntlet.run(suite, agent="script:reference")
    assert e.value.exit_code == 2 and case.name in str(e.value)


def test_bad_options_are_invalid_input(suite):
    with pytest.raises(gauntlet.InvalidInputError, match="unknown agent"):
        gauntlet.run(suite, agent="gpt")
    with pytest.raises(gauntlet.InvalidInputError, match="trial_timeout"):
        gauntlet.run(suite, agent="script:reference", trial_timeout=0)
    with pytest.raises(gauntlet.InvalidInputError, match="agent must be"):
        gauntlet.run(suite, agent=3)
    with pytest.raises(gauntlet.InvalidInputError):
        gauntlet.load_run(suite)


def test_score_scores_recorded_trajectories(suite, tmp_path):
    played = gauntlet.run(suite, agent="script:reference", out=tmp_path / "played")
    scored = gauntlet.score(played.run_dir, cases=suite, out=tmp_path / "scored")
    assert scored.verdict == "passed"
    assert scored.metrics["pass_rate"] == played.metrics["pass_rate"]
    assert len(scored.trials) == len(played.trials)


def test_to_pandas_has_a_row_per_trial(suite):
    pd = pytest.importorskip("pandas", reason="needs pandas")
    frame = gauntlet.run(suite, agent="script:reference").to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 23
    assert {"case_id", "epoch", "status", "passed", "task_success"} <= set(frame.columns)


def test_ctrl_c_stops_a_run_and_its_folder_resumes(suite, tmp_path):
    import signal
    import subprocess

    out = tmp_path / "run"
    # Ctrl-C as at a terminal: a command started in the background by a non-interactive shell
    # (as CI starts its jobs) inherits SIGINT ignored, and Python then installs no handler.
    script = (
        "import signal, sys, time, gauntlet\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "def agent(case, tools, user):\n"
        "    time.sleep(0.2 if len(sys.argv) == 1 else 0)\n"
        "    return 'slow'\n"
        f"options = dict(out={str(out)!r}) if len(sys.argv) == 1 else dict(resume={str(out)!r})\n"
        f"r = gauntlet.run({str(suite)!r}, agent=agent, epochs=20, concurrency=1, **options)\n"
        "print(len(r.trials))\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    trials = out / "trials.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (trials.exists() and trials.read_text().count("\n") >= 2):
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=30)
    assert child.returncode != 0 and "KeyboardInterrupt" in stderr, stderr
    assert f'resume="{out}"' in stderr, stderr
    done = trials.read_text().count("\n")
    assert 2 <= done < 460
    resumed = subprocess.run([sys.executable, "-c", script, "resume"], capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "460"
    assert trials.read_text().count("\n") == 460


def test_a_named_run_is_compared_by_name_from_the_suites_folder(suite, monkeypatch):
    """Issue 50: `name=` is `gauntlet run --name`; `gauntlet compare NAME_A NAME_B` finds both."""
    base = gauntlet.run(suite, agent="script:reference", filter="fault", name="baseline")
    skip = gauntlet.run(suite, agent="script:skip-confirmation", filter="fault",
                        name="skip-confirm")
    header = json.loads((skip.run_dir / "run.json").read_text())
    assert header["name"] == "skip-confirm"
    monkeypatch.chdir(suite)
    code = gauntlet._native.cli(["compare", "baseline", "skip-confirm", "--fail-on-regression",
                                 "-q"])
    assert code == 1, "B has critical violations on cases where A had none"
    assert base.run_dir != skip.run_dir
    with pytest.raises(gauntlet.InvalidInputError, match="--name"):
        gauntlet.run(suite, agent="script:reference", filter="fault", name="../up")
