#!/usr/bin/env bash
# Builds the wheel users install: dist/gauntlet_harness-VERSION-cp39-abi3-manylinux_2_17_x86_64.whl
# (or the machine's architecture). One wheel for every CPython from 3.9 (the stable ABI), linked
# by zig against glibc 2.17 so that it installs on any Linux of the last decade; installing it
# needs no Rust. Release profile (thin LTO, stripped), as the release workflow builds it.
#
#   scripts/build-wheel.sh            # needs maturin and ziglang: pip install maturin ziglang
#   auditwheel show dist/gauntlet_harness-*.whl
#
# Set CARGO_TARGET_DIR to build beside another build without waiting for its lock (CI does).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p dist
rm -f dist/gauntlet_harness-*.whl
# maturin finds zig through the ziglang package (python3 -m ziglang) when no zig is on PATH.
(cd python && maturin build --release --zig --compatibility manylinux2014 --out ../dist "$@")
ls dist/gauntlet_harness-*.whl
