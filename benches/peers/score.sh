#!/usr/bin/env bash
# `gauntlet score` against the seed article's own Python evaluator (pydantic v2, streamed), on
# the same N random article trajectories, timed in turn by farm-bench (pairs, median ratio).
# Then the floor: a plain serde_json parse of the same file on one core (the `parse` example of
# gauntlet-bench) against `gauntlet score` (the issue asks for score within 2x of it).
#
# usage: benches/peers/score.sh [N ...]      (default: 1000 10000 100000)
# needs: python3 with pydantic v2; a release build (cargo build --release, and
#        cargo build --release -p gauntlet-bench --example parse); farm-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=("${@:-1000 10000 100000}")
data=target/bench-data
mkdir -p "$data"
case_file=examples/incident-desk/cases/seeds/tc-sql-fix-001.json
bin=target/release/gauntlet
for n in ${sizes[@]}; do
  file="$data/article-$n.jsonl"
  [ -s "$file" ] || python3 benches/peers/gen_article.py "$n" "$file"
  echo "== $n trajectories ($(du -h "$file" | cut -f1))"
  farm-bench -n 3 --timeout 900 \
    --vs "python3 benches/peers/article_stream.py $case_file $file" \
    -- sh -c "$bin score $file --cases examples/incident-desk --quiet; test \$? -le 1"
  echo "== $n trajectories: gauntlet score (A) against a plain serde_json parse (B)"
  farm-bench -n 3 --timeout 900 \
    --vs "target/release/examples/parse $file" \
    -- sh -c "$bin score $file --cases examples/incident-desk --quiet; test \$? -le 1"
done
