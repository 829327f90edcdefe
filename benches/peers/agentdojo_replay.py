"""The peer side of the AgentDojo replay benchmark: AgentDojo's own package re-executes the tool
calls of a folder of its run logs (user_task_N/none/none.json, ...) in its banking environment
and re-checks each run's utility and security, as `gauntlet run SUITE --agent replay:DIR` does.

Usage: agentdojo_replay.py RUNS_DIR   (prints agreement with the logged labels)
Compare: farm-bench --vs 'python3 benches/peers/agentdojo_replay.py RUNS' -- \
         target/release/gauntlet run SUITE --agent replay:RUNS --quiet
"""
import glob
import json
import os
import sys

from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite

suite = get_suite("v1", "banking")
runtime = FunctionsRuntime(suite.tools)
agree = total = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "*", "*.json"))):
    log = json.load(open(path))
    attack = os.path.basename(os.path.dirname(path))
    injection = log.get("injection_task_id") if attack != "none" else None
    injections = log.get("injections") or {}
    env = suite.load_and_inject_default_environment(injections)
    pre = env.model_copy(deep=True)
    output = ""
    for m in log["messages"]:
        if m["role"] == "assistant":
            for c in m.get("tool_calls") or []:
                runtime.run_function(env, c["function"], c["args"])
            content = m.get("content")
            output = content if isinstance(content, str) else ""
    task_id = log["user_task_id"]
    if task_id.startswith("user_task"):
        utility = suite.user_tasks[task_id].utility(output, pre, env)
    else:
        utility = suite.injection_tasks[task_id].security(output, pre, env)
    security = suite.injection_tasks[injection].security(output, pre, env) if injection else True
    total += 2
    agree += (bool(utility) == log["utility"]) + (bool(security) == log["security"])
print(f"{agree}/{total} labels agree")
