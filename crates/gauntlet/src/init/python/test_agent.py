"""The suite as a test: `pytest` runs agent.py through every case and fails, saying why each
failed trial failed, when a gate of the suite fails.

For one test per case instead, the pytest plugin collects the suite itself:
pytest gauntlet.yaml --gauntlet-agent python:agent:agent
"""

from pathlib import Path

import gauntlet
from agent import agent

SUITE = Path(__file__).parent


def test_the_agent_passes_the_suite():
    results = gauntlet.run(SUITE, agent=agent)
    assert results.verdict == "passed", results.summary()
