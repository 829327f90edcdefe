"""The slow-model agent of benches/peers/ray_run.py, importable on the cluster's workers: it
waits SLOW_AGENT_DELAY seconds (a model answering after a fixed delay), then reads the incident
the request names and answers with its status."""

import os
import re
import time


def slow_agent(case, tools, user):
    time.sleep(float(os.environ.get("SLOW_AGENT_DELAY", "0.2")))
    found = re.search(r"INC-\d+", case.user_input or "")
    if not found:
        return "I could not find an incident id in your request."
    try:
        incident = tools.call("get_incident", incident_id=found.group(0))
    except Exception as e:  # a fault or a missing incident: said, not raised
        return f"I could not read {found.group(0)}: {e}"
    return f"{found.group(0)} is {incident.get('status', 'unknown')}."
