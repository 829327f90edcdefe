#!/usr/bin/env bash
# `gauntlet score` against LangChain's agentevals on the same N article trajectories, both
# matching each against the case's reference trajectory in strict mode (gauntlet's case is the
# example's TC-SQL-FIX-001 with `trajectory_match: {mode: strict}` added, in a copy of the suite;
# gauntlet also runs all its other evaluators). Timed in turn by farm-bench (median ratio).
#
# usage: benches/peers/agentevals.sh [N ...]      (default: 2000)
# needs: python3 with agentevals==0.0.9; a release build; farm-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=("${@:-2000}")
data=target/bench-data
mkdir -p "$data"
suite=$data/strict-suite
rm -rf "$suite"
cp -r examples/incident-desk "$suite"
case_file=$suite/cases/seeds/tc-sql-fix-001.json
python3 - "$case_file" <<'PY'
import json, sys
case = json.load(open(sys.argv[1]))
case["trajectory_match"] = {"mode": "strict", "args": "exact"}
json.dump(case, open(sys.argv[1], "w"), indent=1)
PY
bin=target/release/gauntlet
for n in ${sizes[@]}; do
  file="$data/article-$n.jsonl"
  [ -s "$file" ] || python3 benches/peers/gen_article.py "$n" "$file"
  echo "== $n trajectories, strict trajectory match"
  farm-bench -n 3 --timeout 1800 \
    --vs "python3 benches/peers/agentevals_match.py $case_file $file strict" \
    -- sh -c "rm -rf $data/strict-run; $bin score $file --cases $suite --out $data/strict-run --quiet; test \$? -le 1"
done
