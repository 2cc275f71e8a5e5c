#!/usr/bin/env bash
# Regenerates the screenshots in docs/img/ from real data: the browser tests (tests/browser) run a real
# `kgym serve --gpus none` with real CPU evaluations, synthetic run folders and a `kgym grade --report` page, and
# save each page they check when KGYM_SCREENSHOTS is set. Needs a build (./setup.sh) and chromium (setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${KGYM_BUILD_DIR:-build}"
export KGYM_BIN="$PWD/$BUILD_DIR/src/cli/kgym" KGYM_PYTHON="${KGYM_PYTHON:-/usr/bin/python3}"
export KGYM_SCREENSHOTS="$PWD/docs/img"
PYTHONPATH="$PWD/python:$PWD/$BUILD_DIR/python" "$KGYM_PYTHON" -m pytest -q tests/browser -k "not ten_thousand"
ls -l docs/img/*.png
