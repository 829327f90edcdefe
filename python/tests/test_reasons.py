"""Why a trial failed, said in words from Python (issue 50, items 2 and 4): `Trial.reasons`,
`Trial.explain()`, `Trial.error`; info-level scores are notes, never failures; an agent's
exception said on stderr; `verbose=True` prints the command's summary; pytest items fail with
the reasons and the run folder."""

import os
import subprocess
import sys

import gauntlet
from conftest import EXAMPLES
from gauntlet import Trial
from incident_agent import agent as incident_agent


def closes_without_asking(case, tools, user):
    tools.call("get_incident", incident_id="INC-004217")
    tools.call("close_incident", incident_id="INC-004217")
    return "INC-004217 is closed."


def misspells_a_key(case, tools, user):
    found = tools.call("get_incident", incident_id="INC-004217")
    return found["assigne"]


def score(name, severity, passed, reason=None, events=()):
    s = {"name": name, "dimension": "safety", "value": 0.0, "score": 0.0 if not passed else 1.0,
         "passed": passed, "severity": severity, "details": {}, "events": list(events)}
    if reason is not None:
        s["reason"] = reason
    return s


def test_reasons_hold_error_and_critical_scores_most_severe_first():
    trial = Trial({"case_id": "c", "epoch": 1, "status": "failed", "scores": [
        score("StateVerification", "error", False, '/x/status expected "closed", got "open"'),
        score("duplicate_calls", "info", False, "get_incident called twice with the same arguments"),
        score("confirmation_before_write", "critical", False, "close_incident (call #2) ran "
              "without an approved confirmation", events=[3]),
        score("within_call_budget", "error", True),
    ]})
    assert trial.failed_evaluators == ["confirmation_before_write", "StateVerification"]
    assert trial.reasons == [
        {"evaluator": "confirmation_before_write", "severity": "critical",
         "reason": "close_incident (call #2) ran without an approved confirmation", "events": [3]},
        {"evaluator": "StateVerification", "severity": "error",
         "reason": '/x/status expected "closed", got "open"', "events": []},
    ]
    assert [n["evaluator"] for n in trial.notes] == ["duplicate_calls"]
    assert trial.error is None
    assert trial.explain() == "\n".join([
        "c (epoch 1): failed",
        "  confirmation_before_write (critical): close_incident (call #2) ran without an "
        "approved confirmation",
        '  StateVerification (error): /x/status expected "closed", got "open"',
    ])


def test_a_score_stored_without_a_reason_is_still_explained():
    # A run stored before scores carried `reason`: its details' reason, else its score.
    old = score("confirmation_before_write", "critical", False)
    old["details"] = {"reason": "no confirmation before close_incident"}
    bare = score("StepEfficiency", "error", False)
    trial = Trial({"case_id": "c", "epoch": 0, "status": "failed", "scores": [bare, old]})
    assert [r["reason"] for r in trial.reasons] == [
        "no confirmation before close_incident", "did not pass (score 0.0)",
    ]


def test_a_write_without_confirmation_is_explained_critical_first(suite):
    results = gauntlet.run(suite, agent=closes_without_asking, filter="close-mitigated")
    trial = results.trials[0]
    assert trial.status == "failed" and trial.error is None
    assert trial.reasons, trial.scores
    assert trial.reasons[0]["evaluator"] == "confirmation_before_write"
    assert trial.reasons[0]["severity"] == "critical"
    severities = [r["severity"] for r in trial.reasons]
    assert severities == sorted(severities, key=["critical", "error"].index)
    for r in trial.reasons:
        assert r["reason"].strip() and "\n" not in r["reason"], r
        assert all(isinstance(i, int) and 0 <= i < len(trial.events) for i in r["events"]), r
    text = trial.explain()
    assert isinstance(text, str) and text.startswith("close-mitigated (epoch 0): failed")
    for r in trial.reasons:
        assert f"{r['evaluator']} ({r['severity']}): {r['reason']}" in text
    # The same reasons from the summary the run returns, as from the record on disk.
    summary = Trial(results.raw["trials"][0])
    assert summary.reasons == trial.reasons and summary.explain() == text


# Issue 50: `failed_evaluators` listed `duplicate_calls` and `error_attribution` ("failed" on a
# passed trial): info-level scores are notes.
def test_info_scores_are_notes_never_failures(suite):
    # The reference reads the same incident twice here: `duplicate_calls` (info) notes it.
    trial = gauntlet.run(suite, agent="script:reference", filter="two-summaries").trials[0]
    info = [s["name"] for s in trial.scores if s["severity"] == "info" and not s["passed"]]
    assert "duplicate_calls" in info, trial.scores
    assert trial.status == "passed", trial.explain()
    assert trial.failed_evaluators == [] and trial.reasons == []
    assert "duplicate_calls" in [n["evaluator"] for n in trial.notes]
    assert trial.explain() == "two-summaries (epoch 0): passed"
    # The rule-based agent fails most cases, with `error_attribution` and `task_success` notes.
    failed = [t for t in gauntlet.run(suite, agent=incident_agent).trials if not t.passed]
    assert any("error_attribution" in [n["evaluator"] for n in t.notes] for t in failed)
    for t in failed:
        info = {s["name"] for s in t.scores if s["severity"] == "info"}
        assert t.failed_evaluators and not info & set(t.failed_evaluators), t.scores
        assert not info & {r["evaluator"] for r in t.reasons}


def test_a_harness_error_is_the_trial_error(suite):
    # A program that dies before it reaches the world: the harness could not run the trial.
    results = gauntlet.run(suite, agent="cmd:exit 7", filter="lookup-status",
                           isolation="none")
    trial = results.trials[0]
    assert trial.status == "error"
    assert isinstance(trial.error, str) and "exit status: 7" in trial.error
    assert trial.error == trial.record["error"]
    # Alone: the scores of a trial that never ran judge nothing.
    assert trial.explain() == f"lookup-status (epoch 0): error\n  harness error: {trial.error}"


def test_an_agent_that_raises_is_said_on_stderr_and_explained(suite, capsys):
    results = gauntlet.run(suite, agent=misspells_a_key, filter="close-mitigated")
    err = capsys.readouterr().err
    trial = results.trials[0]
    assert trial.status == "failed" and trial.error is None
    crash = next(r for r in trial.reasons if r["evaluator"] == "agent_completed")
    assert "KeyError: 'assigne'" in crash["reason"]
    assert "test_reasons.py" in crash["reason"] and "misspells_a_key" in crash["reason"]
    line = f"gauntlet: close-mitigated (epoch 0): agent_completed: {crash['reason']}"
    assert line in err.splitlines(), err
    assert f"agent_completed (error): {crash['reason']}" in trial.explain()


def test_verbose_prints_the_summary_the_command_prints(suite, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    results = gauntlet.run(suite, agent=closes_without_asking, filter="close", verbose=True)
    out = capsys.readouterr().out
    command = subprocess.run(
        [sys.executable, "-m", "gauntlet", "report", str(results.run_dir), "--format", "terminal"],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, COLUMNS="160", NO_COLOR="1"),
    )
    assert command.returncode == 0, command.stderr
    assert out == command.stdout + f"results: {results.run_dir / 'results.json'}\n"
    assert out.startswith(results.summary(width=160))
    assert "verdict: FAILED" in out
    quiet = gauntlet.run(suite, agent="script:reference", filter="lookup-status")
    assert quiet.passed and capsys.readouterr().out == ""


def test_pytest_items_fail_with_the_reasons_and_the_run_folder(suite):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLES / "agents"), str(suite)]))
    (suite / "careless.py").write_text(
        "def agent(case, tools, user):\n"
        "    tools.call('get_incident', incident_id='INC-004217')\n"
        "    tools.call('close_incident', incident_id='INC-004217')\n"
        "    return 'INC-004217 is closed.'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf",
         str(suite / "gauntlet.yaml"), "--gauntlet-agent", "python:careless:agent",
         "-k", "close-mitigated or gates"],
        cwd=suite, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "close-mitigated (epoch 0): failed" in out, out
    assert "confirmation_before_write (critical): " in out, out
    assert f"run folder: {suite / '.gauntlet' / 'runs'}{os.sep}" in out, out
    assert " (info): " not in out, out


# Found while writing these tests: the command run in process (`gauntlet._native.cli`) removed
# this process's scratch folders as it ended, and every later `cmd:` agent of the interpreter
# was a harness error ("cannot make the agent's scratch folder").
def test_a_cmd_agent_runs_after_the_command_ran_in_process(suite):
    def status(results):
        return results.trials[0].status, results.trials[0].error

    first = gauntlet.run(suite, agent="cmd:echo done", filter="lookup-status", isolation="none")
    assert gauntlet._native.cli(["check", str(suite), "-q"]) == 0
    again = gauntlet.run(suite, agent="cmd:echo done", filter="lookup-status", isolation="none")
    assert status(again) == status(first) and status(first)[0] == "failed", status(again)
