#!/usr/bin/env bash
# The Python package's tests (python/tests) against a built wheel, installed into a fresh virtual
# environment: what users get from `pip install`, not the source folder.
#
#   scripts/test-wheel.sh dist/gauntlet_harness-*.whl [pytest arguments]
#
# The environment sees the machine's packages (--system-site-packages: pytest, mcp, pandas, Ray)
# but gets gauntlet only from the wheel. CI runs this on the wheel scripts/build-wheel.sh makes;
# `cargo test -p gauntlet-python` does the same on a wheel it builds in the dev profile.
set -euo pipefail
wheel=$(realpath "$1")
shift
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
"$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider -rs "$@"
