"""Agents for the Ray tests, importable on the cluster's workers (the test puts this folder on
their PYTHONPATH)."""

import os
import time

from incident_agent import agent as incident_agent


def slow_incident_agent(case, tools, user):
    """The example incident agent, thinking for half a second first (a slow model). Where the
    node says so (`GAUNTLET_TEST_MARKERS`), it leaves a mark of each trial it starts."""
    marks = os.environ.get("GAUNTLET_TEST_MARKERS")
    if marks:
        name = f"{case.case_id}@{case.epoch}@{os.getpid()}"
        open(os.path.join(marks, name), "w").close()
    time.sleep(0.5)
    return incident_agent(case, tools, user)
