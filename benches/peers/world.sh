#!/usr/bin/env bash
# tau-bench's airline test split, 50 gold trials: `gauntlet run` of the imported suite (the
# reference agent makes the gold calls and gives the answer; every evaluator runs; results are
# written) against tau-bench's own Python environment doing the same (reset, gold steps, the
# answer that ends the episode and computes tau-bench's reward), and against its reset and gold
# steps alone. Timed in turn by farm-bench (pairs, median ratio; below 1: gauntlet is faster).
#
# usage: benches/peers/world.sh [TAU_BENCH_CHECKOUT]
#   TAU_BENCH_CHECKOUT: a checkout of github.com/sierra-research/tau-bench (default: cloned into
#   target/bench-data/tau-bench). The data comes from ../shared/peers/tau-bench.
# needs: python3 with pydantic; a release build (cargo build --release); farm-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=target/bench-data
mkdir -p "$data"
tau=${1:-$data/tau-bench}
[ -d "$tau/tau_bench" ] || git clone -q --depth 1 https://github.com/sierra-research/tau-bench "$tau"
bin=target/release/gauntlet
suite=$data/airline-suite
rm -rf "$suite"
$bin import tau-bench ../shared/peers/tau-bench --domain airline --out "$suite" >/dev/null
run="rm -rf $data/airline-run && $bin run $suite --out $data/airline-run --quiet"
echo "== 50 gold trials, whole trials (tau-bench computes its reward; gauntlet evaluates and writes)"
farm-bench -n 3 --timeout 900 --vs "python3 benches/peers/tau_bench_env.py $tau" -- sh -c "$run"
echo "== 50 gold trials against tau-bench's reset and gold steps alone (no reward)"
farm-bench -n 3 --timeout 900 --vs "python3 benches/peers/tau_bench_env.py $tau --steps-only" -- sh -c "$run"
