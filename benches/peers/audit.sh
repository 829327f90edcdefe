#!/usr/bin/env bash
# `gauntlet audit` on the tau-bench airline import (50 cases) and the tau2 retail import (114):
# time per case and mutants per second, three runs each by farm-bench, from the JSON report.
#
# usage: benches/peers/audit.sh
# needs: a release build (cargo build --release), ../shared/peers/tau-bench and tau2-bench, farm-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${BIN:-target/release/gauntlet}
peers=../shared/peers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" import tau-bench "$peers/tau-bench" --domain airline \
  --users "$peers/tau-bench/at-7362a17/tau_bench/envs/airline/data/users.json" --out "$work/airline" --quiet
"$bin" import tau2-bench "$peers/tau2-bench" --domain retail --tau-bench-data "$peers/tau-bench" \
  --out "$work/retail" --quiet
for suite in airline retail; do
  start=$(date +%s.%N)
  "$bin" audit "$work/$suite" --json > "$work/$suite.json" || true
  end=$(date +%s.%N)
  python3 - "$work/$suite.json" "$start" "$end" "$suite" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); took = float(sys.argv[3]) - float(sys.argv[2])
cases = len(r["cases"])
print(f"{sys.argv[4]}: {cases} cases ({r['audited_cases']} audited), {r['mutants']} mutants in {took:.2f} s: "
      f"{took / cases * 1000:.1f} ms a case, {r['mutants'] / took:.0f} mutants/s; "
      f"{r['hackable_cases']} hackable, kill rate {r['kill_rate']:.3f}")
PY
  farm-bench -n 3 -- sh -c "$bin audit $work/$suite --json > /dev/null; test \$? -le 1"
done
