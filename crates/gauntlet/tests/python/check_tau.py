"""Checks a gauntlet run of an imported tau-bench suite against tau-bench's own log.

usage: check_tau.py RUN_DIR LOG.json

Prints JSON: for each trial, tau-bench's state hash of its final state (computed as tau-bench
computes it: sha256 of str(to_hashable(data)) over flights, reservations, users), the logged
gt_data_hash of its task, gauntlet's reward (the trial finished, StateVerification and output_assertions passed)
and the logged reward of the same task and trial; and every tool call whose output today differs,
as JSON values, from the logged one.
"""

import json
import sys
from hashlib import sha256
from pathlib import Path


def to_hashable(item):
    # tau_bench/envs/base.py
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(element) for element in item)
    if isinstance(item, set):
        return tuple(sorted(to_hashable(element) for element in item))
    return item


def tau_hash(state):
    data = {k: state[k] for k in ("flights", "reservations", "users")}
    return sha256(str(to_hashable(data)).encode("utf-8")).hexdigest()


def as_value(v):
    """Text tools answer in text; tau-bench's log holds the text, parsed where it is JSON."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def unescape(segment):
    return segment.replace("~1", "/").replace("~0", "~")


def expand(run_dir, value, bases):
    """A stored state: the base file with its changes applied (docs/reference.md)."""
    if not (isinstance(value, dict) and "$state" in value):
        return value
    name = value["$state"]
    if name not in bases:
        bases[name] = (run_dir / name).read_text()
    state = json.loads(bases[name])
    for pointer, v in value.get("$changes", {}).items():
        segs = [unescape(s) for s in pointer.split("/")[1:]]
        target = state
        for s in segs[:-1]:
            target = target.setdefault(s, {})
        if v is None:
            target.pop(segs[-1], None)
        else:
            target[segs[-1]] = v
    return state


def main():
    run_dir, log_path = Path(sys.argv[1]), Path(sys.argv[2])
    log = json.loads(log_path.read_text())
    logged_hash, logged_reward = {}, {}
    for item in log:
        h = ((item["info"].get("reward_info") or {}).get("info") or {}).get("gt_data_hash")
        if h:
            logged_hash[item["task_id"]] = h
        logged_reward[(item["task_id"], item["trial"])] = item["reward"]
    trials, calls, differences = [], 0, []
    bases = {}
    for line in (run_dir / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        task = int(r["case_id"].rsplit("-", 1)[1])
        final = expand(run_dir, r["final_state"], bases)
        passed = {s["name"]: s["passed"] for s in r["scores"]}
        # An episode the step limit cut off (an `unfinished` event) scores 0, as in tau-bench;
        # so does a trial the harness failed.
        unfinished = any(e.get("type") == "unfinished" for e in r["trajectory"]["events"])
        reward = float(r["status"] != "error" and not unfinished
                       and passed.get("StateVerification", False)
                       and passed.get("output_assertions", True))
        trials.append({
            "case_id": r["case_id"],
            "task": task,
            "trial": r["epoch"],
            "hash": tau_hash(final),
            "logged_hash": logged_hash.get(task),
            "reward": reward,
            "logged_reward": logged_reward.get((task, r["epoch"])),
            "status": r["status"],
        })
        for e in r["trajectory"]["events"]:
            if e.get("type") != "tool_call" or "recorded_output" not in e:
                continue
            calls += 1
            now = e["result"] if "result" in e else e.get("error", {}).get("message")
            if as_value(now) != as_value(e["recorded_output"]):
                differences.append({
                    "case_id": r["case_id"], "trial": r["epoch"], "tool": e["tool"],
                    "arguments": e.get("arguments"), "now": now, "recorded": e["recorded_output"],
                })
    print(json.dumps({"trials": trials, "calls": calls, "differences": differences}))


main()
