"""One request behind every door: the same wrong option gives the same kind of error and the same
message from ``gauntlet run`` and from ``gauntlet.run``, both validated by the library's
``RunRequest``; and an option only the request knows (``max_cost_eur``) works from Python
without a Python edit."""

import subprocess
import sys

import pytest

import gauntlet
from gauntlet import HarnessError, InvalidInputError

#: (Python keyword arguments, the same as flags, the message both must give).
BAD = [
    ({"epochs": 0}, ["--epochs", "0"], "`epochs` must be at least 1"),
    ({"concurrency": 0}, ["--concurrency", "0"], "`concurrency` must be at least 1"),
    (
        {"trial_timeout": -1.0},
        ["--trial-timeout=-1"],
        "`trial_timeout` must be a positive number of seconds, not -1",
    ),
    (
        {"max_cost_eur": 0.0},
        ["--max-cost-eur", "0"],
        "`max_cost_eur` must be a positive number of euros, not 0",
    ),
    ({"shard": "3/2"}, ["--shard", "3/2"], "`shard` "),
    (
        {"record_cassette": "a.jsonl", "replay_cassette": "b.jsonl"},
        ["--record-cassette", "a.jsonl", "--replay-cassette", "b.jsonl"],
        None,  # clap refuses the pair itself; Python's message names both keys
    ),
]


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "gauntlet", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("kwargs,flags,message", BAD, ids=[str(b[0]) for b in BAD])
def test_a_wrong_option_reads_the_same_from_the_command_and_from_python(
    suite, kwargs, flags, message
):
    done = cli("run", str(suite), *flags, "-q")
    assert done.returncode == 2, done.stderr
    with pytest.raises(InvalidInputError) as raised:
        gauntlet.run(suite, "script:reference", **kwargs)
    said = str(raised.value)
    if message is None:
        assert "record_cassette" in said and "replay_cassette" in said, said
        return
    assert said.startswith(message), said
    assert f"error: {said}" in done.stderr, (said, done.stderr)


def test_an_unknown_option_is_refused_by_its_name(suite):
    with pytest.raises(InvalidInputError, match="unknown field `epoch`"):
        gauntlet.run(suite, "script:reference", epoch=3)


def test_a_spent_budget_stops_the_run_resumably(suite, tmp_path):
    """`max_cost_eur` is a field of the request only: Python passes it through. A priced model
    makes the shipped cassette's trials cost money; the budget stops the run after the first,
    and resuming with a larger one finishes it."""
    with open(suite / "gauntlet.yaml", "a") as f:
        f.write(
            "\ngateway:\n  prices:\n    smollm2:\n"
            "      prompt_eur_per_1k: 1.0\n      completion_eur_per_1k: 1.0\n"
        )
    cassette = str(suite / "cassettes" / "smollm2.jsonl")
    out = tmp_path / "run"
    common = dict(filter="close", replay_cassette=cassette, concurrency=1)
    with pytest.raises(HarnessError, match=r"cost budget \(`max_cost_eur` 0.0100 EUR\) was spent after 1 of 2"):
        gauntlet.run(suite, "openai:smollm2", out=out, max_cost_eur=0.01, **common)
    assert not (out / "results.json").exists()
    results = gauntlet.run(
        suite, resume=out, max_cost_eur=500, replay_cassette=cassette, concurrency=1
    )
    assert len(list(results.trials)) == 2
