"""AgentDojo's own banking suite (the `agentdojo` package, v1 tasks) as the reference for
gauntlet's re-implementation: runs each sequence of tool calls in AgentDojo's environment and
prints, as JSON, the initial environment, and per sequence the environment after it, every tool
error, and each user task's utility and each injection task's security on it.

Usage: agentdojo_reference.py SEQUENCES.json, where the file holds
[{"calls": [[TOOL, {ARGS}], ...], "output": "final answer"}, ...].
Exit 3 when the package is missing (the Rust test then skips).
"""
import json
import sys

try:
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suite
except ImportError:
    print("agentdojo is not installed (pip install agentdojo)", file=sys.stderr)
    sys.exit(3)

suite = get_suite("v1", "banking")
runtime = FunctionsRuntime(suite.tools)
sequences = json.load(open(sys.argv[1]))


def dump(env):
    return {
        "bank_account": env.bank_account.model_dump(),
        "filesystem": env.filesystem.model_dump(),
        "user_account": env.user_account.model_dump(),
    }


initial = suite.load_and_inject_default_environment({})
out = {"initial": dump(initial), "results": []}
for seq in sequences:
    env = suite.load_and_inject_default_environment({})
    pre = env.model_copy(deep=True)
    errors = []
    for name, args in seq["calls"]:
        _, error = runtime.run_function(env, name, args)
        if error:
            errors.append(error)
    output = seq.get("output", "")
    out["results"].append({
        "post": dump(env),
        "errors": errors,
        "utility": {tid: bool(t.utility(output, pre, env)) for tid, t in suite.user_tasks.items()},
        "security": {tid: bool(t.security(output, pre, env)) for tid, t in suite.injection_tasks.items()},
    })
json.dump(out, sys.stdout)
