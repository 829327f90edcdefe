"""The pytest plugin: a suite's cases as test items, failed gates failing the session."""

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
    assert one.returncode == 0 and "1 passed, 23 deselected" in one.stdout, one.stdout


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
