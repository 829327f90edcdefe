"""The seed article's own DeterministicEvaluator (pydantic v2), streamed over a JSON Lines file
of trajectories for one test case: each line is parsed into the article's AgentTrajectory and
scored with its four metrics; a count of passes is printed. The peer `gauntlet score` is timed
against (benches/peers/score.sh).

usage: python3 article_stream.py CASE.json TRAJECTORIES.jsonl
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../crates/gauntlet-eval/tests/reference"))
from article_reference import AgentTrajectory, TestCase, evaluate  # noqa: E402

case_file, trajectories = sys.argv[1], sys.argv[2]
with open(case_file) as f:
    case = TestCase(**json.load(f))
passed = total = 0
with open(trajectories) as f:
    for line in f:
        t = AgentTrajectory(**json.loads(line))
        total += 1
        passed += all(m.passed for m in evaluate(case, t))
print(f"{passed}/{total} trajectories pass all four metrics")
