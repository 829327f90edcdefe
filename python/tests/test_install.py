"""What `pip install` puts on the machine: the `gauntlet` command beside `import gauntlet`."""

import shutil
import subprocess
import sys
from pathlib import Path

import gauntlet


def command():
    found = Path(sys.executable).parent / "gauntlet"
    return str(found) if found.exists() else shutil.which("gauntlet")


def test_the_installed_command_runs_the_example_suite(suite):
    done = subprocess.run([command(), "run", str(suite)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: PASSED" in done.stdout


def test_the_command_keeps_its_exit_codes_and_help(tmp_path):
    assert subprocess.run([command(), "check", str(tmp_path)], capture_output=True).returncode == 2
    helped = subprocess.run([command(), "run", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--agent" in helped.stdout
    version = subprocess.run([command(), "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"gauntlet {gauntlet.__version__}"


def test_python_dash_m_is_the_command_too(suite):
    done = subprocess.run([sys.executable, "-m", "gauntlet", "check", str(suite)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "ok: suite" in done.stdout, done.stderr


def test_the_extension_is_built_for_the_stable_abi():
    # One wheel serves every CPython from 3.9 (cp39-abi3).
    assert gauntlet._native.__file__.endswith(".abi3.so"), gauntlet._native.__file__
