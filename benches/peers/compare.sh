#!/usr/bin/env bash
# gauntlet against the tools it replaces, each timed beside gauntlet in one run, ratios printed
# (gauntlet / peer; below 1: gauntlet is faster or spends less):
#   score.sh  `gauntlet score` vs the seed article's Python DeterministicEvaluator
#   agentevals.sh  strict trajectory match vs LangChain agentevals
#   world.sh  tau-bench airline gold trials vs tau-bench's own environment
#   mcp.sh    an MCP tool call vs FastMCP, with the official Python client
#
# usage: benches/peers/compare.sh [TAU_BENCH_CHECKOUT]
# needs: a release build (cargo build --release); farm-bench; python3 with pydantic,
# agentevals==0.0.9, mcp and fastmcp; tau-bench's source (cloned from GitHub when not given).
set -euo pipefail
cd "$(dirname "$0")"
./score.sh 1000 10000 100000
./agentevals.sh 2000
./world.sh "$@"
./mcp.sh 2000
