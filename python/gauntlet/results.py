"""Results as Python objects: a run's verdict, metrics, gates and trials."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, TypedDict, Union

from gauntlet import _native


@dataclass(frozen=True)
class Gate:
    """One gate of the suite and whether the run held it."""

    name: str
    expr: str
    passed: bool
    inputs: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Diagnostic:
    """A problem in a suite's file, located as editors want it (line and col from 1; 0 when
    unknown)."""

    file: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"


class Reason(TypedDict):
    """Why a trial failed, one failing score: the evaluator, its severity (``"critical"`` or
    ``"error"``; ``"info"`` for a note), one line a person reads without context, and the
    indexes of the trajectory's events it points at."""

    evaluator: str
    severity: str
    reason: str
    events: List[int]


#: The note of a question the case's simulated user had no reply to: whose failure it may be.
USER_UNANSWERED = "user_unanswered"
_SEVERITY_ORDER = {"critical": 0, "error": 1}


def _fails(score: Dict[str, Any]) -> bool:
    """Whether a score fails its trial: it did not pass and its severity is not ``info``."""
    return not score.get("passed", True) and score.get("severity", "error") != "info"


def _reason_of(score: Dict[str, Any]) -> str:
    """A failing score's reason; for a run stored before scores carried one, what its details
    say, else its score."""
    reason = score.get("reason")
    if reason:
        return reason
    details = score.get("details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return details["reason"]
    return f"did not pass (score {score.get('score')})"


class Trial:
    """One trial: a case played once (``epoch`` counts the repetitions from 0).

    ``status`` is ``"passed"``, ``"failed"`` or ``"error"`` (the harness could not run it:
    ``error`` says why); ``scores`` holds every evaluator's verdict, and ``reasons`` and
    ``explain()`` why the trial failed; ``trajectory`` the events in order (tool calls
    with arguments, results, errors, latency and idempotency keys, questions, confirmations,
    faults, the final answer); ``final_state`` the world after the trial.
    """

    __slots__ = ("record",)

    def __init__(self, record: Dict[str, Any]):
        self.record = record

    @property
    def case_id(self) -> str:
        return self.record["case_id"]

    @property
    def epoch(self) -> int:
        return self.record["epoch"]

    @property
    def status(self) -> str:
        return self.record["status"]

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def scores(self) -> List[Dict[str, Any]]:
        return self.record.get("scores", [])

    @property
    def trajectory(self) -> Dict[str, Any]:
        return self.record.get("trajectory", {})

    @property
    def events(self) -> List[Dict[str, Any]]:
        """The trajectory's events, in order."""
        return self.trajectory.get("events", [])

    @property
    def final_answer(self) -> Optional[str]:
        return self.trajectory.get("final_answer")

    @property
    def final_state(self) -> Any:
        return self.record.get("final_state")

    @property
    def error(self) -> Optional[str]:
        """The harness error's message when the harness could not run the trial (status
        ``"error"``); ``None`` otherwise. An agent that raised is no harness error: its trial
        failed, and :attr:`reasons` says why."""
        return self.record.get("error")

    @property
    def failed_evaluators(self) -> List[str]:
        """The evaluators that failed this trial (severity ``error`` or ``critical``), most
        severe first. A score of severity ``info`` (``duplicate_calls``, ``error_attribution``,
        ``user_unanswered``) is a note, never a failure."""
        return [r["evaluator"] for r in self.reasons]

    @property
    def reasons(self) -> List[Reason]:
        """Why the trial failed: each failing score of severity ``error`` or ``critical`` as
        ``{evaluator, severity, reason, events}`` (``reason`` one line a person reads without
        context; ``events`` the indexes in :attr:`events` it points at), critical first."""
        failing = [s for s in self.scores if _fails(s)]
        failing.sort(key=lambda s: _SEVERITY_ORDER.get(s.get("severity"), len(_SEVERITY_ORDER)))
        return [
            {
                "evaluator": s["name"],
                "severity": s.get("severity", "error"),
                "reason": _reason_of(s),
                "events": list(s.get("events", [])),
            }
            for s in failing
        ]

    @property
    def notes(self) -> List[Reason]:
        """Scores of severity ``info`` that did not pass, in the form of :attr:`reasons`: notes
        on the trial (a question the case's user had no reply to, calls repeated), never why it
        failed."""
        return [
            {
                "evaluator": s["name"],
                "severity": "info",
                "reason": _reason_of(s),
                "events": list(s.get("events", [])),
            }
            for s in self.scores
            if s.get("severity") == "info" and not s.get("passed", True)
        ]

    def explain(self) -> str:
        """Why the trial ended as it did, in words: its case, epoch and status, then the harness
        error (status ``"error"``: alone, since the scores of a trial that could not run judge
        nothing) or each failing evaluator with its severity and reason, most severe first, and
        the ``user_unanswered`` note when the case's user had no reply (whose failure it may
        be)::

            close-mitigated (epoch 0): failed
              StateVerification (error): /incidents/INC-004217/status expected "closed", got "mitigated"
              required_tool_recall (error): never called close_incident
        """
        lines = [f"{self.case_id} (epoch {self.epoch}): {self.status}"]
        if self.error is not None:
            # The scores of a trial the harness could not run judge what never happened.
            lines.append(f"  harness error: {self.error}")
            return "\n".join(lines)
        for r in self.reasons:
            lines.append(f"  {r['evaluator']} ({r['severity']}): {r['reason']}")
        for note in self.notes:
            if note["evaluator"] == USER_UNANSWERED:
                lines.append(f"  note: {note['evaluator']}: {note['reason']}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Trial(case_id={self.case_id!r}, epoch={self.epoch}, status={self.status!r})"


class TrialSummaries(Sequence):
    """A large run's trial summaries (``results.raw["trials"]``), left on disk as the command
    leaves them: each walk reads ``summaries.jsonl`` again, one summary at a time, so holding
    the results of a run of any size costs the same."""

    def __init__(self, run_dir: Path):
        self._run_dir = run_dir
        self._len: Optional[int] = None

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(_native.read_summaries(str(self._run_dir)))

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(1 for _ in self)
        return self._len

    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += len(self)
        found = next(islice(self, index, None), None) if index >= 0 else None
        if found is None:
            raise IndexError("trial summary index out of range")
        return found

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Sequence, list)) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"TrialSummaries({str(self._run_dir)!r})"


class Results:
    """A finished run (or a stored one, from :func:`gauntlet.load_run`).

    ``verdict`` is ``"passed"`` (every gate held), ``"failed"`` (a gate failed) or ``"error"``
    (no trial could run, or a gate could not be decided: ``errors`` says why). ``metrics`` are
    the run's metrics by name (``pass_rate``, ``task_success_rate``, ``pass_hat_k``, …);
    ``gates`` each gate's outcome; ``trials`` every trial, read from the run folder when first
    asked for (``iter_trials`` streams them instead); ``run_dir`` the run folder, which every
    ``gauntlet`` command reads (``gauntlet report``, ``gate``, ``compare``).
    """

    def __init__(
        self,
        results: Dict[str, Any],
        run_dir: str,
        errors: Optional[List[str]] = None,
        trials_on_disk: bool = False,
    ):
        self.raw = results
        self.run_dir = Path(run_dir)
        if trials_on_disk:
            # Past 1,000 trials the summaries stay in the run folder (`summaries.jsonl`).
            self.raw["trials"] = TrialSummaries(self.run_dir)
        # Why the run earns no verdict: no trial could run, then gates that could not be decided.
        self.errors: List[str] = list(errors or [])
        self._trials: Optional[List[Trial]] = None

    @property
    def verdict(self) -> str:
        if self.errors:
            return "error"
        return self.raw["verdict"]

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    @property
    def exit_code(self) -> int:
        """The code ``gauntlet run`` would exit with: 0 passed, 1 a gate failed, 2 a gate could
        not be decided, 3 no trial could run."""
        if self.errors and self.errors[0].startswith("no trial could run"):
            return 3
        if self.errors:
            return 2
        return 0 if self.raw["verdict"] == "passed" else 1

    @property
    def metrics(self) -> Dict[str, Optional[float]]:
        return self.raw["metrics"]

    @property
    def gates(self) -> List[Gate]:
        return [
            Gate(g["name"], g["expr"], g["passed"], g.get("inputs", {}))
            for g in self.raw.get("gates", [])
        ]

    @property
    def failed_gates(self) -> List[Gate]:
        return [g for g in self.gates if not g.passed]

    @property
    def run_id(self) -> str:
        return self.raw["header"]["run_id"]

    @property
    def suite(self) -> str:
        return self.raw["header"]["suite"]

    @property
    def agent(self) -> str:
        return self.raw["header"]["agent"]

    @property
    def retried(self) -> int:
        """Trials played again after a harness error (``retry_errors``)."""
        return int(self.raw.get("retried", 0))

    def iter_trials(self) -> Iterator[Trial]:
        """Streams the trials from the run folder, in the order they finished."""
        for record in _native.read_trials(str(self.run_dir)):
            yield Trial(record)

    @property
    def trials(self) -> List[Trial]:
        """Every trial, in the order of the results (case, then epoch)."""
        if self._trials is None:
            order = {(t["case_id"], t["epoch"]): i for i, t in enumerate(self.raw.get("trials", []))}
            trials = list(self.iter_trials())
            trials.sort(key=lambda t: order.get((t.case_id, t.epoch), len(order)))
            self._trials = trials
        return self._trials

    def summary(self, *, color: bool = False, width: Optional[int] = None) -> str:
        """The run's summary as ``gauntlet run`` prints it: the trials table, why each failed
        trial did not pass (the first 20), the metrics, gates and verdict. ``color`` adds ANSI
        colours; ``width`` is the terminal's columns."""
        return _native.summary(str(self.run_dir), color=color, width=width)

    @property
    def failed_trials(self) -> List[Trial]:
        """The trials that did not pass (status ``failed`` or ``error``), in the order of
        :attr:`trials`; ``"\n".join(t.explain() for t in results.failed_trials)`` says why."""
        return [t for t in self.trials if not t.passed]

    def to_pandas(self):
        """One row per trial: ``case_id``, ``epoch``, ``status``, ``passed``, ``duration_ms``,
        ``steps``, ``tool_calls``, ``cost_eur`` and one column per evaluator (its score).
        Needs pandas (``pip install 'gauntlet-harness[pandas]'``)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError(
                "Results.to_pandas needs pandas: pip install 'gauntlet-harness[pandas]'"
            ) from e
        rows = []
        for t in self.raw.get("trials", []):
            row = {
                "case_id": t["case_id"],
                "epoch": t["epoch"],
                "status": t["status"],
                "passed": t["status"] == "passed",
                "duration_ms": t.get("duration_ms"),
                "steps": t.get("steps"),
                "tool_calls": t.get("tool_calls"),
                "cost_eur": t.get("cost_eur"),
            }
            for s in t.get("scores", []):
                row[s["name"]] = s.get("score")
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return (
            f"Results(verdict={self.verdict!r}, trials={len(self.raw.get('trials', []))}, "
            f"pass_rate={self.metrics.get('pass_rate')!r}, run_dir={str(self.run_dir)!r})"
        )


__all__ = ["Results", "Trial", "Reason", "Gate", "Diagnostic", "TrialSummaries"]
