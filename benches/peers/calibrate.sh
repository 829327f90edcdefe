#!/usr/bin/env bash
# `gauntlet calibrate --json` against the same figures from scikit-learn, statsmodels and
# krippendorff (benches/peers/calibrate.py), on N random pass/fail items with 5 benchmarks and
# 4 agents as segments (both read the same JSONL files). Timed in turn by farm-bench.
#
# usage: benches/peers/calibrate.sh [N ...]      (default: 1106 100000)
# needs: python3 with scikit-learn, statsmodels, krippendorff; a release build; farm-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=("${@:-1106 100000}")
data=target/bench-data
mkdir -p "$data"
bin=target/release/gauntlet
for n in ${sizes[@]}; do
  labels="$data/calibrate-labels-$n.jsonl"
  verdicts="$data/calibrate-verdicts-$n.jsonl"
  python3 - "$n" "$labels" "$verdicts" <<'PY'
import json, random, sys
n = int(sys.argv[1])
rng = random.Random(7)
with open(sys.argv[2], "w") as h, open(sys.argv[3], "w") as j:
    for i in range(n):
        human = rng.random() < 0.27
        judge = human if rng.random() < 0.83 else not human
        seg = {"benchmark": f"bench-{i % 5}", "agent": f"agent-{i % 4}"}
        h.write(json.dumps({"item": f"t{i}", "label": human, "segment": seg}) + "\n")
        j.write(json.dumps({"item": f"t{i}", "label": judge}) + "\n")
PY
  # The two agree before they are timed.
  python3 - <(python3 benches/peers/calibrate.py "$labels" "$verdicts") \
    <("$bin" calibrate --labels "$labels" --verdicts "$verdicts" --json) <<'PY'
import json, sys
peer, ours = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ["n", "tp", "fp", "fn", "tn", "precision", "recall", "cohen_kappa", "kappa_se", "krippendorff_alpha", "mcnemar_p"]:
    assert abs(peer[k] - ours[k]) <= 1e-9 * max(1, abs(peer[k])), (k, peer[k], ours[k])
assert abs(peer["segments"]["agent"]["agent-3"]["cohen_kappa"] - ours["segments"]["agent"]["agent-3"]["cohen_kappa"]) < 1e-9
print("figures agree")
PY
  echo "== $n items"
  farm-bench -n 5 --timeout 1800 \
    --vs "python3 benches/peers/calibrate.py $labels $verdicts" \
    -- $bin calibrate --labels $labels --verdicts $verdicts --json
done
