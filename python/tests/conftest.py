"""Shared pieces of the Python package's tests: the repository and a private copy of the example
suite per test (runs write under the suite's `.gauntlet`)."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

sys.path.insert(0, str(EXAMPLES / "agents"))


@pytest.fixture
def suite(tmp_path):
    """A copy of examples/incident-desk, without its stored runs."""
    dest = tmp_path / "incident-desk"
    shutil.copytree(EXAMPLES / "incident-desk", dest, ignore=shutil.ignore_patterns(".gauntlet"))
    return dest
