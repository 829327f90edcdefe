"""LangChain's agentevals (the `agentevals` package from PyPI) scoring article trajectories the
way gauntlet's trajectory_match does: each trajectory's calls as OpenAI-style messages against
the case's reference trajectory, in one match mode (default strict). Streamed, one line at a
time. Prints how many matched.

usage: python3 agentevals_match.py CASE.json TRAJECTORIES.jsonl [strict|unordered|subset|superset]
needs: agentevals (pip install agentevals==0.0.9)
"""
import json
import sys

from agentevals.trajectory.match import create_trajectory_match_evaluator


def messages(calls, answer):
    out = [{"role": "user", "content": "task"}]
    for name, args in calls:
        out.append({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": name, "arguments": json.dumps(args)}}]})
        out.append({"role": "tool", "content": "ok"})
    out.append({"role": "assistant", "content": answer})
    return out


case = json.load(open(sys.argv[1]))
reference = messages(
    [(s["tool"], s["args"]) for s in case["reference_trajectory"] if "tool" in s],
    next((s["answer"] for s in case["reference_trajectory"] if "answer" in s), ""))
mode = sys.argv[3] if len(sys.argv) > 3 else "strict"
modes = {mode: create_trajectory_match_evaluator(trajectory_match_mode=mode)}
matched = {m: 0 for m in modes}
with open(sys.argv[2]) as f:
    for line in f:
        t = json.loads(line)
        calls = [(c["tool_name"], c["arguments"]) for s in t["steps"] for c in s["tool_calls"]]
        outputs = messages(calls, t.get("final_answer") or "")
        for m, evaluate in modes.items():
            matched[m] += bool(evaluate(outputs=outputs, reference_outputs=reference)["score"])
print(json.dumps(matched))
