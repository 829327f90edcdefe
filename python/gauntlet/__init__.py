"""gauntlet: evaluate AI agents in simulated tool worlds, from Python.

A run plays every case of a suite against an agent, injects the suite's faults, records each
trajectory and judges it; the result says whether the suite's gates held::

    import gauntlet

    def agent(case, tools, user):
        incident = tools.call("get_incident", incident_id="INC-004217")
        return f"INC-004217 is {incident['status']}."

    results = gauntlet.run("examples/incident-desk", agent=agent)
    assert results.verdict == "passed", results.failed_gates

The engine is Rust (the same library as the ``gauntlet`` command); an agent written in Python
reaches the trial's world and user in process, with no server between them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import queue
import sys
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

from gauntlet import _native
from gauntlet._native import Case, Tools, User
from gauntlet.errors import GauntletError, HarnessError, InvalidInputError, ToolError
from gauntlet.results import Diagnostic, Gate, Reason, Results, Trial

__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]
#: An agent: ``agent(case, tools, user) -> str`` (the final answer), a coroutine function of the
#: same shape, or a string the command accepts (``"script:reference"``, ``"cmd:python agent.py"``,
#: ``"openai:MODEL"``, ``"python:MODULE:FUNCTION"``).
Agent = Union[Callable[[Case, Tools, User], Any], str]


def run(
    suite: PathLike,
    agent: Optional[Agent] = None,
    *,
    epochs: Optional[int] = None,
    seed: Optional[int] = None,
    concurrency: Optional[int] = None,
    faults: Optional[str] = None,
    filter: Optional[str] = None,
    attack: Optional[str] = None,
    shard: Optional[str] = None,
    out: Optional[PathLike] = None,
    resume: Optional[PathLike] = None,
    run_id: Optional[str] = None,
    name: Optional[str] = None,
    trial_timeout: Optional[float] = None,
    retry_errors: int = 0,
    isolation: Optional[str] = None,
    on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
    trial_events: bool = True,
    replay_cassette: Optional[PathLike] = None,
    record_cassette: Optional[PathLike] = None,
    gateway_upstream: Optional[str] = None,
    verbose: bool = False,
    max_cost_eur: Optional[float] = None,
    **options: Any,
) -> Results:
    """Runs a suite against an agent and returns its :class:`Results`.

    ``agent`` is a callable ``agent(case, tools, user) -> str`` or a coroutine function of that
    shape: ``case.user_input`` is the user's request; ``tools.call(name, **arguments)`` calls a
    tool of the world and returns its result or raises :class:`ToolError` (with the HTTP-like
    ``status``); ``user.confirm(action) -> bool`` and ``user.ask(question) -> str`` reach the
    simulated user. Every call lands in the trajectory as an MCP call would. Trials run
    ``concurrency`` at a time (4 by default), each on a thread of its own; a coroutine agent
    gets an event loop per trial. ``agent`` may also be any string ``gauntlet run --agent``
    takes, ``"python:MODULE:FUNCTION"`` included (the module imported from the current folder
    first); ``None`` plays the suite's own agent (else ``script:reference``). The run records a
    function as ``python:MODULE:FUNCTION`` too. An agent that raises fails its trial (status
    ``failed``, an ``agent_completed`` score whose ``reason`` names the exception): it is the
    agent's failure, not the harness's. The exception is said on ``sys.stderr`` as it happens
    (``gauntlet: CASE (epoch E): agent_completed: the Python agent raised …``).

    ``epochs`` and ``seed`` default to the suite's; ``faults`` names a fault profile of the suite
    (or ``"none"``); ``filter`` keeps cases whose id contains it; ``attack`` places one of the
    suite's attacks in every case; ``shard="I/N"`` runs only part I of N of the plan (as
    ``gauntlet run --shard`` does; ``gauntlet merge`` makes the whole, and :mod:`gauntlet.ray`
    spreads the parts over a cluster); ``out`` is the run folder (default: a new one under the
    suite's ``.gauntlet/runs``); ``name`` names the run (``gauntlet run --name``: ``gauntlet
    compare baseline candidate`` from the suite's folder finds it); ``trial_timeout`` is in seconds (300 by default: an agent still
    running then is interrupted with ``TimeoutError`` and its trial is an error);
    ``retry_errors`` plays a trial that ends in a harness error (status ``error``: the world or
    the model upstream failed, an agent could not start) again up to that many times before
    its error counts, and ``results.retried`` says how many trials were; ``isolation``
    is how ``cmd:`` agents are sandboxed (``"auto"``: bubblewrap where it works; ``"bubblewrap"``;
    ``"none"``). A Python agent runs in this process, unsandboxed: it is your code.
    ``max_cost_eur`` stops starting trials once those run cost that much (the agent's and the
    simulated user's model calls): the run then raises :class:`HarnessError` saying so, its
    finished trials kept, and ``resume=`` with a larger budget goes on.

    The options are the run's request, the same keys ``gauntlet run``'s flags have
    (``--trial-timeout`` is ``trial_timeout``); any other key of it (``user_model``,
    ``shard_count``, ``set_aside_corrupt``) may be given in ``options``, and a key it does not
    have is refused with :class:`InvalidInputError`, checked as the command line checks it.

    ``on_event`` is called with each event of the run's stream as ``gauntlet run --events``
    writes it (``run_started``, ``trial_started``, the trial's own events when ``trial_events``,
    ``verdict``, ``trial_finished``, ``run_finished``), from the run's thread; an exception it
    raises stops the run at once, as Ctrl-C does, and is raised. :func:`stream` iterates them
    instead. ``verbose=True`` prints the summary ``gauntlet run`` prints when the run ends (the
    trials table, why each failed trial did not pass, metrics, gates, verdict) and the results'
    path; :meth:`Results.summary` gives the same text.

    Raises :class:`InvalidInputError` for a suite or option that is wrong and
    :class:`HarnessError` when the harness cannot run; a failed gate is not an exception
    (``results.verdict == "failed"``). Ctrl-C stops the run (``KeyboardInterrupt``); its folder
    keeps every finished trial, and ``resume=RUN_DIR`` with the same suite and agent goes on
    (the run's other settings come from its folder; another agent is refused, and a folder
    another run of this process is writing too).
    """
    native_agent: Any = agent
    label = None
    if agent is not None and not isinstance(agent, str):
        if not callable(agent):
            raise InvalidInputError(
                "agent must be a callable agent(case, tools, user) or a string such as "
                '"script:reference"'
            )
        native_agent = _synchronous(agent)
        label = "python:" + _name_of(agent)
    request: Dict[str, Any] = dict(
        agent=native_agent if isinstance(native_agent, str) else None,
        epochs=epochs,
        seed=seed,
        concurrency=concurrency,
        faults=faults,
        filter=filter,
        attack=attack,
        shard=shard,
        out=_path(out),
        resume=_path(resume),
        run_id=run_id,
        name=name,
        trial_timeout=trial_timeout,
        retry_errors=retry_errors,
        isolation=isolation,
        replay_cassette=_path(replay_cassette),
        record_cassette=_path(record_cassette),
        gateway_upstream=gateway_upstream,
        max_cost_eur=max_cost_eur,
    )
    request.update(options)
    done = _native.run(
        os.fspath(suite),
        {k: v for k, v in request.items() if v is not None},
        agent=None if isinstance(native_agent, str) else native_agent,
        agent_label=label,
        on_event=on_event,
        trial_events=trial_events,
        stop=getattr(_streaming, "stop", None),
    )
    results = Results(done["results"], done["run_dir"], done["errors"], done["trials_on_disk"])
    if verbose:
        _print_summary(results)
    return results


def _print_summary(results: Results) -> None:
    """The summary as ``gauntlet run`` ends: colour when stdout is a terminal and ``NO_COLOR``
    is unset, the width from ``COLUMNS``; then the results' path, and why no trial ran."""
    out = sys.stdout
    color = bool(getattr(out, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and 0 < int(columns) < 65536 else None
    print(results.summary(color=color, width=width), end="", file=out)
    print(f"results: {results.run_dir / 'results.json'}", file=out)
    for error in results.errors:
        print(f"error: {error}", file=sys.stderr)


#: The stop of the run a :class:`Stream` plays on this thread (the stream's own thread), which
#: :func:`run` hands to the engine so that the stream can end the run when its consumer leaves.
_streaming = threading.local()
#: The end of a stream's events.
_DONE = object()


class _Feed:
    """What a :class:`Stream`'s thread shares with its consumer: the bounded queue of events,
    the run's stop, and how the run ended. The thread holds this, not the stream, so that a
    stream dropped unread can stop its run."""

    def __init__(self, capacity: int):
        self.events: "queue.Queue[Any]" = queue.Queue(maxsize=capacity)
        self.stop = _native.Stop()
        self.results: Optional[Results] = None
        self.error: Optional[BaseException] = None

    def put(self, event: Any) -> None:
        """Queues an event, on the run's thread: the run waits while the queue is full (the
        consumer is behind), and drops it once the consumer has left."""
        while not self.stop.stopped:
            try:
                self.events.put(event, timeout=0.05)
                return
            except queue.Full:
                continue

    def work(self, suite: PathLike, agent: Optional[Agent], options: Dict[str, Any]) -> None:
        _streaming.stop = self.stop
        try:
            self.results = run(suite, agent, on_event=self.put, **options)
        except BaseException as e:  # handed to the iterating thread
            if not self.stop.stopped:
                self.error = e
        finally:
            self.put(_DONE)

    def leave(self) -> None:
        """The consumer is gone: the run stops, and a put waiting for room returns."""
        self.stop.stop()
        try:
            while True:
                self.events.get_nowait()
        except queue.Empty:
            pass


class Stream:
    """A run followed live: iterate it for the events (dicts, as ``gauntlet run --events``
    writes them); once the iteration ends, ``results`` holds the run's :class:`Results`. An
    error of the run is raised from the iteration.

    At most ``CAPACITY`` events wait unread: past that the run waits for the consumer, as
    ``gauntlet run --events -`` waits for its pipe. Leaving the iteration early (``break``, an
    exception, Ctrl-C), :meth:`close`, or dropping the stream stops the run; its folder keeps
    every finished trial, to ``resume``."""

    #: Events that may wait unread before the run waits for the consumer.
    CAPACITY = 1024

    def __init__(self, suite: PathLike, agent: Optional[Agent], options: Dict[str, Any]):
        self._feed = _Feed(self.CAPACITY)
        self._over = False
        self._thread = threading.Thread(
            target=self._feed.work, args=(suite, agent, options), name="gauntlet-run", daemon=True
        )
        self._thread.start()

    @property
    def results(self) -> Optional[Results]:
        """The run's results, once the iteration has ended with the run."""
        return self._feed.results

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        feed = self._feed
        try:
            while not self._over:
                event = feed.events.get()
                if event is _DONE:
                    self._over = True
                    break
                yield event
        except BaseException:  # GeneratorExit (break, close, the iterator dropped), Ctrl-C
            self.close()
            raise
        self._thread.join()
        if feed.error is not None:
            error, feed.error = feed.error, None
            raise error

    def close(self) -> None:
        """Stops the run if it is still going and waits for it to end (its folder keeps every
        finished trial)."""
        if not self._over:
            self._over = True
            self._feed.leave()
        self._thread.join()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if not self._over:
            self._feed.leave()


def stream(suite: PathLike, agent: Optional[Agent] = None, **options: Any) -> Stream:
    """Starts a run (the options of :func:`run`) and returns a :class:`Stream` to iterate its
    events as they happen::

        s = gauntlet.stream("examples/incident-desk", agent=agent)
        for event in s:
            if event["type"] == "trial_finished":
                print(event["case_id"], event["status"])
        print(s.results.verdict)
    """
    return Stream(suite, agent, options)


def score(
    trajectories: PathLike,
    cases: PathLike,
    *,
    out: Optional[PathLike] = None,
    gateway_upstream: Optional[str] = None,
) -> Results:
    """Scores recorded trajectories against a suite's cases without running anything, as
    ``gauntlet score`` does. ``trajectories`` is a JSONL file of trajectories (or a run folder);
    ``cases`` the suite. The scored run is written to ``out`` (default: a new folder under the
    suite's ``.gauntlet/runs``). Items that cannot be scored raise :class:`InvalidInputError`
    naming file and line."""
    done = _native.score(
        os.fspath(trajectories),
        os.fspath(cases),
        out=_path(out),
        gateway_upstream=gateway_upstream,
    )
    if done["problems"]:
        raise InvalidInputError("\n".join(done["problems"]))
    return Results(done["results"], done["run_dir"], done["errors"])


def check(suite: PathLike) -> List[Diagnostic]:
    """Checks a suite as ``gauntlet check`` does (configuration, worlds, cases, gates, custom
    evaluators); its problems, each with file, line and column; empty when it is sound."""
    return [
        Diagnostic(str(d["file"]), d["line"], d["col"], d["message"])
        for d in _native.check(os.fspath(suite))
    ]


def load_run(path: PathLike) -> Results:
    """A stored run (a run folder, as ``gauntlet run`` writes it) as :class:`Results`."""
    done = _native.read_results(os.fspath(path))
    return Results(done["results"], done["run_dir"], done["errors"], done["trials_on_disk"])


def _path(path: Optional[PathLike]) -> Optional[str]:
    return None if path is None else os.fspath(path)


def _synchronous(agent: Callable[..., Any]) -> Callable[[Case, Tools, User], Optional[str]]:
    """The agent as the harness calls it on a trial's thread: a coroutine is run to its end on
    an event loop of its own; the answer must be a string (or None)."""
    where = _place(agent)

    def call(case: Case, tools: Tools, user: User) -> Optional[str]:
        answer = agent(case, tools, user)
        if inspect.isawaitable(answer):
            answer = asyncio.run(_awaited(answer))
        if answer is not None and not isinstance(answer, str):
            # The agent's place, since this line is gauntlet's (the trial's error names the
            # innermost frame outside the package, and there is none).
            raise TypeError(
                f"the agent returned {type(answer).__name__}, not the final answer as a str"
                f"{where}"
            )
        return answer

    return call


def _place(agent: Callable[..., Any]) -> str:
    """Where the agent is defined, as `` (agent.py:12 in agent)``; empty when unknown."""
    target: Any = agent
    while isinstance(target, functools.partial):
        target = target.func
    try:
        target = inspect.unwrap(target)
    except ValueError:
        pass
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if code is None:
        code = getattr(getattr(type(target), "__call__", None), "__code__", None)
    if code is None:
        return ""
    return f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno} in {code.co_name})"


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _name_of(agent: Callable[..., Any]) -> str:
    """``MODULE:FUNCTION``, as ``python:MODULE:FUNCTION`` names a Python agent everywhere (the
    command's ``--agent``, the pytest plugin, the run's record)."""
    module = getattr(agent, "__module__", None) or "__main__"
    name = getattr(agent, "__qualname__", None) or type(agent).__name__
    return f"{module}:{name}"


__all__ = [
    "run",
    "stream",
    "Stream",
    "score",
    "check",
    "load_run",
    "Results",
    "Trial",
    "Reason",
    "Gate",
    "Diagnostic",
    "Case",
    "Tools",
    "User",
    "Agent",
    "GauntletError",
    "InvalidInputError",
    "HarnessError",
    "ToolError",
]
