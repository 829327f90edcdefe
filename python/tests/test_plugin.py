"""The pytest plugin: a suite's cases as test items, failed gates failing the session."""

import json
import os
import subprocess
import sys

from conftest import EXAMPLES


def pytest_of(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES / "agents"))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )


def test_a_suite_runs_as_one_item_per_case_and_one_for_the_gates(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "script:reference", cwd=suite)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "24 passed" in done.stdout  # 23 cases and the gates


def test_a_failed_gate_fails_the_session_and_names_the_case(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "script:forbidden", cwd=suite)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gauntlet.yaml::gates" in done.stdout
    assert "gate failed: no critical policy violations" in done.stdout
    assert "forbidden_tool_used" in done.stdout


def test_a_python_agent_is_named_as_module_and_function(suite):
    done = pytest_of(
        "--gauntlet", str(suite), "--gauntlet-agent", "python:incident_agent:agent", cwd=suite
    )
    # The rule-based agent knows incidents only: some cases fail, and the gates say so.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gauntlet.yaml::gates" in done.stdout
    one = pytest_of(
        "--gauntlet", str(suite), "--gauntlet-agent", "python:incident_agent:agent",
        "-k", "close-mitigated", cwd=suite,
    )
    # The case and its suite's gates (never deselected while a case of the suite runs).
    assert one.returncode == 0 and "2 passed, 22 deselected" in one.stdout, one.stdout


def runs_of(suite):
    """The case ids each stored run of the suite played."""
    runs = {}
    for summaries in (suite / ".gauntlet" / "runs").glob("*/summaries.jsonl"):
        lines = summaries.read_text().splitlines()
        runs[summaries.parent.name] = {json.loads(line)["case_id"] for line in lines}
    return list(runs.values())


def test_a_selected_case_runs_alone_and_the_gates_say_so(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "script:reference",
                     "-k", "close-mitigated", cwd=suite)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 22 deselected" in done.stdout, done.stdout
    assert "gates of gauntlet.yaml were decided on 1 of its 23 cases" in done.stdout, done.stdout
    assert runs_of(suite) == [{"close-mitigated"}]


def test_a_case_named_by_its_node_id_runs_alone_with_the_gates(suite):
    done = pytest_of(str(suite / "gauntlet.yaml") + "::close-mitigated",
                     "--gauntlet-agent", "script:reference", cwd=suite)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
    assert runs_of(suite) == [{"close-mitigated"}]


def test_cases_selected_by_tag_keep_their_gates(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "script:reference",
                     "-m", "fault", cwd=suite)
    assert done.returncode == 0, done.stdout + done.stderr
    # The eight fault cases and the gates; their ids share "fault-", which no other id has.
    assert "9 passed, 15 deselected" in done.stdout, done.stdout
    assert "decided on 8 of its 23 cases (the run's filter: 'fault-')" in done.stdout
    assert len(runs_of(suite)) == 1 and len(runs_of(suite)[0]) == 8


def test_cases_no_one_filter_keeps_run_the_whole_suite_and_the_gates_say_so(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "script:reference",
                     "-k", "close-mitigated or fault-empty", cwd=suite)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout, done.stdout
    assert "decided on all 23 cases: no filter keeps exactly the 2 selected" in done.stdout


def test_a_python_agent_that_cannot_be_imported_is_one_usage_line(suite):
    done = pytest_of(str(suite / "gauntlet.yaml"), "--gauntlet-agent", "python:no_such_mod:agent",
                     cwd=suite)
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    said = (done.stdout + done.stderr).strip().splitlines()
    assert len(said) <= 3, said
    assert any("no_such_mod" in line and "PYTHONPATH" in line for line in said), said


def test_a_python_agent_is_found_from_the_rootdir(suite):
    (suite / "my_agent.py").write_text(
        "def agent(case, tools, user):\n    return 'I cannot help with that.'\n"
    )
    (suite / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "gauntlet.yaml", "--gauntlet-agent", "python:my_agent:agent", "-k", "close-mitigated"],
        cwd=suite, env=env, capture_output=True, text=True, timeout=600,
    )
    # Imported (the agent answers, and fails the case): not a usage error.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "close-mitigated" in done.stdout


def test_suites_are_not_collected_unless_asked(suite, tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_ok():\n    pass\n")
    done = pytest_of(str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout


def test_a_broken_suite_is_a_collection_error(suite):
    case = next((suite / "cases").rglob("*.yaml"))
    case.write_text("case_id: [unclosed\n")
    done = pytest_of(str(suite / "gauntlet.yaml"), cwd=suite)
    assert done.returncode == 2, done.stdout
    assert case.name in done.stdout
