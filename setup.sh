#!/usr/bin/env bash
# Installs every dependency kgym needs (Debian/Ubuntu, as root or with sudo) and builds it into build/.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  # tests/format/check_format.sh (a CTest test): the C++ sources match .clang-format.
  clang-format
  nlohmann-json3-dev libcli11-dev libsqlite3-dev libcurl4-openssl-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev libhiredis-dev redis-server libxxhash-dev
  pybind11-dev python3-dev python3-numpy python3-torch python3-pytest python3-pip util-linux iproute2 procps
  # torch's C++ headers (python3-torch ships only links to them): CUDA-backend candidates build C++
  # extensions with torch.utils.cpp_extension (g++ and ninja from the lines above).
  libtorch-dev
  # kgym sft / kgym train: YAML configuration (C++) and the same files read from Python.
  libyaml-cpp-dev python3-yaml
  # The dashboard: Chart.js is embedded into the kgym binary at build time (no CDN); its browser tests drive
  # headless Chromium through Selenium.
  libjs-chart.js chromium chromium-driver python3-selenium
)
if [ "${KGYM_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

BUILD_DIR="${KGYM_BUILD_DIR:-build}"
PY="${KGYM_PYTHON:-/usr/bin/python3}"
# Triton's CPU interpreter lets CI run the suite's Triton solutions (TRITON_INTERPRET=1). It lives in a private
# folder so sandboxed workers never import this old Triton; 3.0.0 is the newest that works with Debian's torch 1.13.
if [ "${KGYM_SKIP_PIP:-0}" != 1 ] && [ ! -d "$BUILD_DIR/triton-pkgs/triton" ]; then
  "$PY" -m pip install -q --break-system-packages --no-deps --target "$BUILD_DIR/triton-pkgs" triton==3.0.0 \
    || echo "setup: triton 3.0.0 not installed; the Triton-interpreter tests will skip"
fi
# The learner (python/kgym_train) on CI's Python: tokenizers (byte-level BPE), safetensors (checkpoints) and
# pyarrow (parquet SFT data; 17.0 is the newest that works with Debian's numpy 1.24), in a private folder that
# kgym puts on the learner's PYTHONPATH. transformers is not installed: its Qwen3 needs torch >= 2 (Debian has
# 1.13), so CI's learner runs the pure-torch tiny model; the GPU machine has transformers.
if [ "${KGYM_SKIP_PIP:-0}" != 1 ] && [ ! -d "$BUILD_DIR/train-pkgs/tokenizers" ]; then
  "$PY" -m pip install -q --break-system-packages --no-deps --target "$BUILD_DIR/train-pkgs" \
    tokenizers==0.21.4 safetensors==0.8.0 pyarrow==17.0.0 \
    || echo "setup: learner packages not installed; the training tests will skip"
fi
# Benchmark-only reference (bench/bm25 compares against it); tests never need it. Opt in with KGYM_BENCH_DEPS=1.
if [ "${KGYM_BENCH_DEPS:-0}" = 1 ] && ! "$PY" -c "import rank_bm25" 2>/dev/null; then
  "$PY" -m pip install -q --break-system-packages rank_bm25 \
    || echo "setup: rank_bm25 not installed; bench/bm25 will time kgym alone"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${KGYM_BUILD_TYPE:-RelWithDebInfo}" \
  -DPython3_EXECUTABLE="${KGYM_PYTHON:-/usr/bin/python3}" ${KGYM_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "${KGYM_JOBS:-$(nproc)}"
echo "setup: built $BUILD_DIR/src/cli/kgym"
