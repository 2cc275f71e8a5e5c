#!/usr/bin/env bash
# Runs every test: the C++ suites through CTest and the Python harness tests through pytest.
# GPU tests skip cleanly where no GPU is visible; the CPU path exercises the real pipeline.
set -uo pipefail
cd "$(dirname "$0")"
BUILD_DIR="${KGYM_BUILD_DIR:-build}"
PY="${KGYM_PYTHON:-/usr/bin/python3}"
export KGYM_BIN="$PWD/$BUILD_DIR/src/cli/kgym"
export KGYM_PYTHON="$PY"
[ -d "$BUILD_DIR/triton-pkgs/triton" ] && export KGYM_TRITON_PATH="$PWD/$BUILD_DIR/triton-pkgs"
rc=0
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${KGYM_TEST_JOBS:-2}" --timeout 600 || rc=1
PYTHONPATH="$PWD/python:$PWD/$BUILD_DIR/python:$PWD/$BUILD_DIR/train-pkgs${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pytest -q $(ls -d python/tests tests/py tests/redteam tests/browser 2>/dev/null) || rc=1
exit $rc
