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
``agent(case, tools, user) -> str`` (the ini option ``gauntlet_agent`` sets a default); a Python
agent is imported once, when pytest starts, with the rootdir on ``sys.path``, and one that cannot
be imported is one usage error.

Selecting cases (``-k``, ``-m`` on the cases' tags, ``gauntlet.yaml::CASE``) runs only those
cases when one filter of the run keeps exactly them (one case, or cases whose ids share a part
no other case has); otherwise the whole suite runs and the selected items report on their
cases. The ``gates`` item stays whenever a case of its suite is selected (the gates are the
run's), and the session's summary says when the gates were decided on part of the suite.
"""

from __future__ import annotations

import importlib
import sys
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


_AGENT = "_gauntlet_agent"
_SUBSETS = "_gauntlet_subsets"


def pytest_configure(config: pytest.Config) -> None:
    """Resolves the agent once: a Python agent that cannot be imported is one usage line, not a
    traceback per item."""
    setattr(config, _AGENT, _resolve_agent(config))
    setattr(config, _SUBSETS, [])


def _resolve_agent(config: pytest.Config) -> Any:
    spec = config.getoption("gauntlet_agent", None) or config.getini("gauntlet_agent")
    if not spec or not spec.startswith("python:"):
        return spec or None
    target = spec[len("python:"):]
    module, sep, name = target.partition(":")
    if not sep or not module or not name:
        raise pytest.UsageError(
            f"--gauntlet-agent {spec}: a Python agent is python:MODULE:FUNCTION"
        )
    # The project's own modules import as they do in its tests: from the rootdir.
    root = str(config.rootpath)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        found: Any = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except Exception as e:  # the module's own errors too: one line, not a traceback
        hint = ""
        if isinstance(e, ImportError):
            hint = (
                f" (the module is looked for from {root} and sys.path: put its folder on "
                "PYTHONPATH, or in pytest's `pythonpath` ini option)"
            )
        raise pytest.UsageError(
            f"--gauntlet-agent {spec}: {type(e).__name__}: {e}{hint}"
        ) from None
    if not callable(found):
        raise pytest.UsageError(f"--gauntlet-agent {spec}: {name} is not callable")
    return found


def _filter_for(selected: List[str], every: List[str]) -> Optional[str]:
    """A filter of the run (a part of the case id) that keeps exactly the selected cases, or
    None when none does: each selected id, then the longest part all selected ids share."""
    wanted = set(selected)
    candidates = list(selected)
    if len(selected) > 1:
        first = min(selected, key=len)
        parts = {first[i:j] for i in range(len(first)) for j in range(i + 1, len(first) + 1)}
        shared = [p for p in parts if all(p in s for s in selected)]
        candidates = sorted(shared, key=len, reverse=True)
    for part in candidates:
        if {c for c in every if part in c} == wanted:
            return part
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: List[pytest.Item]
) -> Iterator[None]:
    """After every selection (-k, -m, node ids): each suite runs only its selected cases where a
    filter allows, and keeps its gates item while any of its cases is selected."""
    yield
    suites: Dict[Any, List[str]] = {}
    for item in items:
        if isinstance(item, CaseItem):
            suites.setdefault(item.parent, []).append(item.name)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for suite, selected in suites.items():
        every = suite.case_ids
        if len(selected) < len(every):
            suite.filter = _filter_for(selected, every)
            getattr(config, _SUBSETS).append((suite, len(selected), len(every)))
        if not any(isinstance(i, GatesItem) and i.parent is suite for i in items):
            gates = suite.gates_item or GatesItem.from_parent(suite, name="gates")
            last = max(i for i, item in enumerate(items) if item.parent is suite)
            items.insert(last + 1, gates)
            deselected = reporter.stats.get("deselected", []) if reporter else []
            if gates in deselected:
                deselected.remove(gates)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for suite, selected, every in getattr(terminalreporter.config, _SUBSETS, []):
        if suite.filter is not None:
            how = f"decided on {selected} of its {every} cases (the run's filter: {suite.filter!r})"
        else:
            how = (
                f"decided on all {every} cases: no filter keeps exactly the {selected} selected, "
                "so the whole suite ran"
            )
        terminalreporter.write_line(f"gauntlet: the gates of {suite.nodeid} were {how}")


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
        self.case_ids: List[str] = [case["case_id"] for case in cases]
        self.filter: Optional[str] = None
        for case in cases:
            item = CaseItem.from_parent(self, name=case["case_id"])
            for tag in case.get("tags", []):
                if tag.isidentifier():
                    self.config.addinivalue_line("markers", f"{tag}: a gauntlet case tag")
                    item.add_marker(tag)
            yield item
        self.gates_item: Optional[GatesItem] = GatesItem.from_parent(self, name="gates")
        yield self.gates_item

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
                    agent=getattr(config, _AGENT),
                    epochs=config.getoption("gauntlet_epochs"),
                    seed=config.getoption("gauntlet_seed"),
                    filter=self.filter,
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
        if lines and self.parent.filter is not None:
            lines.append(
                f"(the gates were decided on the cases the filter {self.parent.filter!r} keeps, "
                "not the whole suite)"
            )
        if lines:
            lines.append(f"run folder: {results.run_dir}")
            raise GauntletFailure("\n".join(lines))

    def reportinfo(self) -> Any:
        return self.path, None, "gauntlet gates"

