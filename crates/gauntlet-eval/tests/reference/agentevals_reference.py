"""The reference for gauntlet's `trajectory_match`: LangChain's `agentevals` package itself.

stdin: [{"outputs": [message], "reference": [message], "kwargs": {...}}, ...] (OpenAI messages)
stdout: [bool, ...] (each evaluator's `score`)
exit 3 (and why on stderr) when agentevals is missing.
"""
import json
import sys

try:
    from agentevals.trajectory.match import create_trajectory_match_evaluator
except ImportError as e:  # pragma: no cover
    print(f"agentevals is not installed (pip install agentevals): {e}", file=sys.stderr)
    sys.exit(3)

out = []
for item in json.load(sys.stdin):
    evaluator = create_trajectory_match_evaluator(**item["kwargs"])
    result = evaluator(outputs=item["outputs"], reference_outputs=item["reference"])
    out.append(bool(result["score"]))
json.dump(out, sys.stdout)
