"""A run spread over a Ray cluster: ``gauntlet.ray.run`` plays the trials of one run as Ray tasks
and writes one ordinary run folder, so reports, gates, ``compare`` and the viewer see a run
like any other::

    import gauntlet.ray

    results = gauntlet.ray.run("examples/incident-desk", agent=agent, epochs=20, address="auto")
    print(results.verdict, results.metrics["pass_rate"])

How it works: the run's plan is cut into parts by the rule ``gauntlet run --shard I/N`` uses
(trial ``p`` of the plan belongs to part ``p mod N``), many more parts than the cluster has
CPUs so that fast and slow nodes balance; each part is one task that unpacks the suite (sent
once through the object store) on its node, runs its trials there with the same seed and run
id, and sends its run folder back. The driver writes each part as it arrives and merges them
with ``gauntlet merge``'s checks (every part exactly once, of one run) through the library's
one writer. A task whose worker or node dies is run again elsewhere by Ray (``max_retries``);
since a part's trials only count when its task returns, every trial appears exactly once. The
results are those of ``gauntlet.run`` with the same suite, agent, seed and run id.

The agent is a string (``"script:reference"``, ``"cmd:..."``, ``"openai:MODEL"``) or a
callable sent to the workers with Ray's serialiser: define it in a module the workers can
import (the same package installed on every node), or in ``__main__``/a notebook, whose
functions are sent by value.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import tarfile
import tempfile
from typing import Any, Callable, Dict, List, Optional

from gauntlet import _native
from gauntlet.errors import HarnessError, InvalidInputError
from gauntlet.results import Results

PathLike = Any

#: Parts per CPU of the cluster, by default: enough for a slow node not to hold the run back.
PARTS_PER_CPU = 4


def run(
    suite: PathLike,
    agent: Any = None,
    *,
    epochs: Optional[int] = None,
    seed: Optional[int] = None,
    address: Optional[str] = "auto",
    parts: Optional[int] = None,
    concurrency: Optional[int] = None,
    faults: Optional[str] = None,
    filter: Optional[str] = None,
    attack: Optional[str] = None,
    out: Optional[PathLike] = None,
    run_id: Optional[str] = None,
    trial_timeout: Optional[float] = None,
    retry_errors: int = 0,
    isolation: Optional[str] = None,
    max_retries: int = 3,
    num_cpus: float = 1,
    on_part: Optional[Callable[[int, int], None]] = None,
) -> Results:
    """Runs a suite against an agent on a Ray cluster; the same :class:`Results` as
    :func:`gauntlet.run`, with the run folder at ``results.run_dir`` on this machine.

    ``address`` is the cluster (``"auto"``: the one this machine belongs to, or
    ``RAY_ADDRESS``; ``None`` starts a local one); an already initialised Ray is used as it is.
    ``parts`` is how many tasks the run is cut into (default: four per CPU of the cluster, at
    most one per trial); each task takes ``num_cpus`` CPUs and runs ``concurrency`` trials at
    a time. A task whose worker dies is retried ``max_retries`` times. ``on_part(done, total)``
    is called as parts come back. The other options are :func:`gauntlet.run`'s; ``seed`` and
    ``run_id`` are fixed before the parts start, so every part plays the same plan.

    Raises :class:`InvalidInputError` for a wrong suite or option (before anything is sent to
    the cluster) and :class:`HarnessError` when a part cannot run; Ctrl-C cancels the tasks.
    """
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise HarnessError(
            "gauntlet.ray needs Ray: pip install 'ray>=2.40' on this machine and every node"
        ) from e
    suite = os.path.abspath(os.fspath(suite))
    if not os.path.isdir(suite):
        raise InvalidInputError(f"{suite}: not a suite folder")
    spec = agent if isinstance(agent, str) or agent is None else None
    if agent is not None and spec is None and not callable(agent):
        raise InvalidInputError(
            "agent must be a callable agent(case, tools, user) or a string such as "
            '"script:reference"'
        )
    planned = _native.plan(
        suite, agent=spec, epochs=epochs, seed=seed, filter=filter, attack=attack
    )
    if run_id is None:
        run_id = planned["run_id"]
    options: Dict[str, Any] = dict(
        epochs=planned["epochs"],
        seed=planned["seed"],
        concurrency=concurrency,
        faults=faults,
        filter=filter,
        attack=attack,
        run_id=run_id,
        trial_timeout=trial_timeout,
        retry_errors=retry_errors,
        isolation=isolation,
        trial_events=False,
    )
    started_here = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except ConnectionError as e:
            raise HarnessError(
                f"no Ray cluster at {address!r} ({e}); start one with `ray start --head`, give "
                "its address, or address=None for a local one"
            ) from None
        started_here = True
    try:
        count = parts or _parts_for(planned["trials"], ray.cluster_resources().get("CPU", 1))
        count = max(1, min(int(count), planned["trials"]))
        packed = ray.put(_pack(suite))
        task = ray.remote(_run_part).options(
            num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False
        )
        pending = {
            task.remote(packed, os.path.basename(suite), i, count, agent, options): i
            for i in range(1, count + 1)
        }
        work = tempfile.mkdtemp(prefix=f".parts-{run_id}-", dir=_runs_dir(suite, out))
        try:
            folders: List[str] = []
            try:
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1)
                    index = pending.pop(done[0])
                    files = _get(ray, done[0])
                    folder = os.path.join(work, f"part-{index}-of-{count}")
                    _unpack_part(files, folder)
                    folders.append(folder)
                    if on_part is not None:
                        on_part(len(folders), count)
            except BaseException:
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise
            target = os.fspath(out) if out is not None else os.path.join(
                suite, ".gauntlet", "runs", run_id
            )
            merged = _native.merge(folders, target, suite=suite)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if started_here:
            ray.shutdown()
    return Results(
        merged["results"], merged["run_dir"], merged["errors"], merged.get("trials_on_disk", False)
    )


def _parts_for(trials: int, cpus: float) -> int:
    return max(1, min(trials, math.ceil(PARTS_PER_CPU * max(cpus, 1))))


def _runs_dir(suite: str, out: Optional[PathLike]) -> str:
    """Where the parts wait before the merge: beside the run folder, on the same disk."""
    where = (
        os.path.dirname(os.path.abspath(os.fspath(out)))
        if out is not None
        else os.path.join(suite, ".gauntlet", "runs")
    )
    os.makedirs(where, exist_ok=True)
    return where


def _pack(suite: str) -> bytes:
    """The suite folder as a gzipped tar, without its state (``.gauntlet``: runs, caches)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(suite, arcname="suite", filter=_without_state)
    return buf.getvalue()


def _without_state(info: tarfile.TarInfo) -> Optional[tarfile.TarInfo]:
    parts = info.name.split("/")
    if len(parts) > 1 and parts[1] == ".gauntlet" or "__pycache__" in parts:
        return None
    return info


def _run_part(
    packed: bytes, name: str, index: int, count: int, agent: Any, options: Dict[str, Any]
) -> Dict[str, bytes]:
    """A Ray task: one part of the run, on whichever node Ray chose; its run folder's files."""
    import gauntlet

    with tempfile.TemporaryDirectory(prefix="gauntlet-part-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
            try:
                tar.extractall(tmp, filter="data")
            except TypeError:  # Python without extraction filters (before 3.9.17)
                tar.extractall(tmp)
        suite = os.path.join(tmp, "suite")
        folder = os.path.join(tmp, "part")
        gauntlet.run(suite, agent, shard=f"{index}/{count}", out=folder, **options)
        files: Dict[str, bytes] = {}
        for root, _, names in os.walk(folder):
            for n in names:
                path = os.path.join(root, n)
                with open(path, "rb") as f:
                    files[os.path.relpath(path, folder)] = f.read()
        return files


def _unpack_part(files: Dict[str, bytes], folder: str) -> None:
    for rel, data in files.items():
        path = os.path.normpath(os.path.join(folder, rel))
        if not path.startswith(folder + os.sep):
            raise HarnessError(f"a part sent a file outside its folder: {rel!r}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def _get(ray: Any, ref: Any) -> Dict[str, bytes]:
    """A part's files; the part's own error (an invalid suite, a harness failure) raised as
    itself rather than wrapped in Ray's."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise HarnessError(str(e)) from None
    except ray.exceptions.RayError as e:
        raise HarnessError(f"a part of the run could not finish on the cluster: {e}") from None


__all__ = ["run", "PARTS_PER_CPU"]
