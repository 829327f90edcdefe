"""pytest plugin: a gauntlet suite as test items, one per case, and one for the suite's gates.

Name a suite's ``gauntlet.yaml`` (or pass ``--gauntlet`` to collect every ``gauntlet.yaml``
under the paths)::

    pytest examples/incident-desk/gauntlet.yaml
    pytest --gauntlet --gauntlet-agent "python:my_agents:support_agent" tests/ suites/

The suite runs once, when its first item runs; each case's item fails when any of its trials
did not pass, saying why (each trial as ``Trial.explain()`` says it: every failing evaluator
with its reason, or the harness error) and where the run folder is; the ``gates`` item fails
when a gate of the suite failed, so a failed gate fails the session. ``--gauntlet-agent`` takes
what ``gauntlet run --agent`` takes, ``python:MODULE:FUNCTION`` included for a Python agent
``agent(case, tools, user) -> str`` (the ini option ``gauntlet_agent`` sets a default).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

SUITE_FILE = "gauntlet.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gauntlet", "gauntlet agent evaluations")
    group.addoption(
        "--gauntlet",
        action="store_true",
        default=False,
        help="collect every gauntlet.yaml under the paths as a suite (one item per case)",
    )
    group.addoption(
        "--gauntlet-agent",
        default=None,
        metavar="AGENT",
        help="the agent: script:NAME, cmd:COMMAND, openai:MODEL, or python:MODULE:FUNCTION "
        "(default: the suite's own agent)",
    )
    group.addoption("--gauntlet-epochs", type=int, default=None, metavar="N",
                    help="repetitions per case (default: the suite's)")
    group.addoption("--gauntlet-seed", type=int, default=None, metavar="SEED",
                    help="the run seed (default: the suite's)")
    parser.addini("gauntlet_agent", "default agent of --gauntlet-agent", default=None)


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> Optional[pytest.Collector]:
    if file_path.name != SUITE_FILE:
        return None
    config = parent.config
    named = any(Path(str(a).split("::")[0]).resolve() == file_path.resolve() for a in config.args)
    if not (config.getoption("gauntlet") or named):
        return None
    return SuiteFile.from_parent(parent, path=file_path)


def _agent(config: pytest.Config) -> Any:
    spec = config.getoption("gauntlet_agent") or config.getini("gauntlet_agent")
    if not spec or not spec.startswith("python:"):
        return spec or None
    target = spec[len("python:"):]
    module, sep, name = target.partition(":")
    if not sep or not module or not name:
        raise pytest.UsageError(
            f"--gauntlet-agent {spec}: a Python agent is python:MODULE:FUNCTION"
        )
    try:
        found: Any = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as e:
        raise pytest.UsageError(f"--gauntlet-agent {spec}: {e}") from e
    return found


class SuiteFile(pytest.File):
    """A suite: its cases, then its gates."""

    def collect(self) -> Iterator[pytest.Item]:
        from gauntlet import InvalidInputError, _native

        try:
            cases = _native.cases(str(self.path.parent))
        except InvalidInputError as e:
            raise self.CollectError(str(e)) from e
        self._run: Optional[Any] = None
        self._failure: Optional[BaseException] = None
        self._by_case: Optional[Dict[str, List[Any]]] = None
        for case in cases:
            item = CaseItem.from_parent(self, name=case["case_id"])
            for tag in case.get("tags", []):
                if tag.isidentifier():
                    self.config.addinivalue_line("markers", f"{tag}: a gauntlet case tag")
                    item.add_marker(tag)
            yield item
        yield GatesItem.from_parent(self, name="gates")

    def results(self) -> Any:
        """The suite's run, made once."""
        import gauntlet

        if self._failure is not None:
            raise self._failure
        if self._run is None:
            config = self.config
            try:
                self._run = gauntlet.run(
                    self.path.parent,
                    agent=_agent(config),
                    epochs=config.getoption("gauntlet_epochs"),
                    seed=config.getoption("gauntlet_seed"),
                )
            except BaseException as e:
                self._failure = e
                raise
        return self._run

    def trials_of(self, case_id: str) -> List[Any]:
        """The run's trials of a case (from their summaries: reasons, not trajectories), the
        summaries read once for every case."""
        from gauntlet import Trial

        if self._by_case is None:
            self._by_case = {}
            for summary in self.results().raw.get("trials", []):
                self._by_case.setdefault(summary["case_id"], []).append(Trial(summary))
        return self._by_case.get(case_id, [])


class GauntletFailure(Exception):
    """A case or gate that did not hold, with what the run said about it."""


class _SuiteItem(pytest.Item):
    """An item of a suite: a failure shows what the run said, not a traceback."""

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, GauntletFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


class CaseItem(_SuiteItem):
    """One case: passes when every trial of it passed."""

    def runtest(self) -> None:
        results = self.parent.results()
        self.user_properties.append(("run_dir", str(results.run_dir)))
        trials = self.parent.trials_of(self.name)
        bad = [t for t in trials if not t.passed]
        if not trials:
            raise GauntletFailure(
                f"the run has no trial of case {self.name}\nrun folder: {results.run_dir}"
            )
        if bad:
            lines = [t.explain() for t in bad]
            lines.append(f"run folder: {results.run_dir}")
            raise GauntletFailure("\n".join(lines))

    def reportinfo(self) -> Any:
        return self.path, None, f"gauntlet case {self.name}"


class GatesItem(_SuiteItem):
    """The suite's gates: fails when one failed (or could not be decided)."""

    def runtest(self) -> None:
        results = self.parent.results()
        self.user_properties.append(("run_dir", str(results.run_dir)))
        lines: List[str] = list(results.errors)
        for gate in results.failed_gates:
            inputs = ", ".join(f"{k}={v}" for k, v in gate.inputs.items())
            lines.append(f"gate failed: {gate.name} ({gate.expr}; {inputs})")
        if lines:
            lines.append(f"run folder: {results.run_dir}")
            raise GauntletFailure("\n".join(lines))

    def reportinfo(self) -> Any:
        return self.path, None, "gauntlet gates"

