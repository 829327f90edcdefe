"""Types of the Rust extension; use the functions of ``gauntlet`` rather than these."""

from typing import Any, Callable, Dict, Iterator, List, Optional, TypedDict

__version__: str

class ToolInfo(TypedDict):
    name: str
    description: str
    #: The arguments' JSON Schema.
    parameters: Dict[str, Any]
    read_only: bool

class Case:
    """The trial as the agent sees it; never its expected outcome."""

    #: The case's id.
    case_id: str
    #: The user's request.
    user_input: str
    #: The repetition, from 0.
    epoch: int
    #: The trial's seed.
    seed: int

class Tools:
    """The world's tools of one trial, in process."""

    def list(self) -> List[ToolInfo]:
        """The tools the agent may call."""
    def call(self, name: str, /, **arguments: Any) -> Any:
        """Calls a tool; its result (JSON as Python values). Raises ``gauntlet.ToolError`` with
        the HTTP-like status when the world answers with an error (an injected fault too), and
        ``TypeError`` or ``ValueError`` for arguments ``json.dumps`` refuses (a value that
        contains itself, NaN, an infinity) or that nest deeper than 128 levels."""
    def call_with(
        self,
        name: str,
        arguments: Optional[Dict[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Calls a tool with its arguments as a dict and, optionally, an idempotency key (a
        retried write with the same key is applied once, as MCP's ``_meta.idempotency_key``)."""
    def sleep(self, seconds: float) -> None:
        """Waits before the next action, as a backoff does: the trial clock advances (every
        time-based verdict counts it) without the thread sleeping."""

class User:
    """The simulated user of one trial."""

    def confirm(self, action: str) -> bool:
        """Asks the user to confirm an action before doing it; whether they approved. Raises
        ``gauntlet.ToolError`` (503) once the trial is over, as ``tools.call`` does."""
    def ask(self, question: str) -> str:
        """Asks the user a question; the answer."""

class TrialRecords(Iterator[Dict[str, Any]]):
    def __next__(self) -> Dict[str, Any]: ...

class TrialSummaries(Iterator[Dict[str, Any]]):
    def __next__(self) -> Dict[str, Any]: ...

class Stop:
    """A run's stop, set from any thread: the run ends as Ctrl-C ends it."""

    def __init__(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def stopped(self) -> bool: ...

def cli(args: List[str]) -> int: ...
def run(
    suite: str,
    request: Dict[str, Any],
    *,
    agent: Optional[Callable[..., Any]] = None,
    agent_label: Optional[str] = None,
    on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
    trial_events: bool = True,
    stop: Optional[Stop] = None,
) -> Dict[str, Any]: ...  # {results, run_dir, errors, trials_on_disk}
def score(
    trajectories: str,
    cases: str,
    *,
    out: Optional[str] = None,
    gateway_upstream: Optional[str] = None,
) -> Dict[str, Any]: ...
def merge(
    parts: List[str], out: str, *, suite: Optional[str] = None
) -> Dict[str, Any]: ...  # {results, run_dir, errors}
def plan(
    suite: str,
    *,
    agent: Optional[str] = None,
    epochs: Optional[int] = None,
    seed: Optional[int] = None,
    filter: Optional[str] = None,
    attack: Optional[str] = None,
) -> Dict[str, Any]: ...  # {trials, epochs, seed, agent, run_id}
def check(suite: str) -> List[Dict[str, Any]]: ...
def cases(suite: str) -> List[Dict[str, Any]]: ...
def read_results(run_dir: str) -> Dict[str, Any]: ...  # {results, run_dir, errors, trials_on_disk}
def read_trials(run_dir: str) -> TrialRecords: ...
def read_summaries(run_dir: str) -> TrialSummaries: ...
def summary(run_dir: str, *, color: bool = False, width: Optional[int] = None) -> str:
    """A finished run's summary as ``gauntlet run`` prints it."""
