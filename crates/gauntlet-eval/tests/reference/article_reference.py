"""The reference for gauntlet's four AgentTrajectory metrics: the `DeterministicEvaluator` of the
seed article "agent-evaluation-metrics" (pydantic v2 models and the four static methods), run
as written on the trajectories the Rust test generates.

stdin: [{"case": TestCase, "trajectory": AgentTrajectory}, ...]
stdout: [[MetricScore, MetricScore, MetricScore, MetricScore], ...]
exit 3 (and why on stderr) when pydantic v2 is missing.
"""
import json
import sys
import time
from typing import Any, Dict, List, Optional

try:
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as e:  # pragma: no cover
    print(f"pydantic v2 is not installed (pip install pydantic): {e}", file=sys.stderr)
    sys.exit(3)


class ToolCallLog(BaseModel):
    model_config = ConfigDict(frozen=True)
    tool_name: str
    arguments: Dict[str, Any] = Field(default_factory=dict)
    observation: Optional[str] = None
    is_error: bool = False
    execution_time_ms: float = 0.0


class TrajectoryStep(BaseModel):
    step_number: int = Field(ge=1)
    thought: str
    tool_calls: List[ToolCallLog] = Field(default_factory=list)
    timestamp: float = Field(default_factory=time.time)


class AgentTrajectory(BaseModel):
    task_id: str
    goal: str
    steps: List[TrajectoryStep] = Field(default_factory=list)
    final_answer: Optional[str] = None
    initial_state: Dict[str, Any] = Field(default_factory=dict)
    final_state: Dict[str, Any] = Field(default_factory=dict)
    total_tokens_used: int = 0
    total_cost_usd: float = 0.0
    total_latency_seconds: float = 0.0


class TestCase(BaseModel):
    task_id: str
    goal: str
    initial_state: Dict[str, Any] = Field(default_factory=dict)
    expected_final_state: Dict[str, Any] = Field(default_factory=dict)
    expected_tools: List[str] = Field(default_factory=list)
    optimal_step_count: int = 3


class MetricScore(BaseModel):
    metric_name: str
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    details: Dict[str, Any] = Field(default_factory=dict)


def state_match(expected_state, actual_state):
    if not expected_state:
        return MetricScore(metric_name="StateVerification", score=1.0, passed=True)
    matches = 0
    for key, val in expected_state.items():
        if key in actual_state and actual_state[key] == val:
            matches += 1
    total = len(expected_state)
    return MetricScore(metric_name="StateVerification", score=matches / total if total else 1.0,
                       passed=matches == total)


def tool_precision_recall(expected_tools, trajectory):
    used = set()
    for step in trajectory.steps:
        for tc in step.tool_calls:
            used.add(tc.tool_name)
    expected = set(expected_tools)
    if not expected:
        return MetricScore(metric_name="ToolSelectionAccuracy", score=1.0, passed=True)
    tp = len(expected.intersection(used))
    precision = tp / len(used) if used else 0.0
    recall = tp / len(expected)
    f1 = (2 * precision * recall) / (precision + recall) if (precision + recall) > 0 else 0.0
    return MetricScore(metric_name="ToolSelectionAccuracy", score=round(f1, 4), passed=recall >= 1.0)


def step_efficiency(optimal_steps, trajectory):
    actual = len(trajectory.steps)
    if actual == 0:
        return MetricScore(metric_name="StepEfficiency", score=0.0, passed=False)
    return MetricScore(metric_name="StepEfficiency", score=round(min(1.0, optimal_steps / actual), 4),
                       passed=actual <= optimal_steps * 1.5)


def redundant_loops(trajectory):
    seen, duplicates, total = set(), 0, 0
    for step in trajectory.steps:
        for tc in step.tool_calls:
            total += 1
            signature = f"{tc.tool_name}:{json.dumps(tc.arguments, sort_keys=True)}"
            if signature in seen:
                duplicates += 1
            else:
                seen.add(signature)
    ratio = duplicates / total if total > 0 else 0.0
    return MetricScore(metric_name="LoopDetection", score=round(max(0.0, 1.0 - ratio), 4),
                       passed=duplicates == 0)


def evaluate(case, t):
    """The four metrics of one trajectory, in the article's order."""
    return (
        state_match(case.expected_final_state, t.final_state),
        tool_precision_recall(case.expected_tools, t),
        step_efficiency(case.optimal_step_count, t),
        redundant_loops(t),
    )


if __name__ == "__main__":
    out = []
    for item in json.load(sys.stdin):
        case = TestCase(**item["case"])
        t = AgentTrajectory(**item["trajectory"])
        out.append([m.model_dump() for m in evaluate(case, t)])
    json.dump(out, sys.stdout)
