#!/usr/bin/env bash
# Materialises what the KernelBench mode of bench/throughput needs from other projects, into folders git ignores
# (they travel to the GPU machine as `carry` paths and are never committed):
#   .kb/KernelBench/   KernelBench's problem files (KernelBench/level1, level2) and its harness (src/kernelbench/*.py),
#                      read from a fetched mirror of ScalingIntelligence/KernelBench
#   .kb/KernelGYM/     KernelGYM's server and worker package (kernelgym/), from a mirror of hkust-nlp/KernelGYM
#   .kb/redis/         this machine's redis-server and the shared libraries it loads (KernelGYM's queue)
#   .kb/SOURCES.txt    which commits and binaries these are
#   .whl/              Python 3.12 wheels the GPU machine lacks (KernelGYM's server: fastapi, uvicorn, pydantic,
#                      pydantic-settings, redis; KernelBench's harness: pydantic, python-dotenv)
# Usage: bench/throughput/materialize_kernelbench.sh [KERNELBENCH_MIRROR [KERNELGYM_MIRROR]]
# (bare git directories; default /work/.mirror/<owner>+<name>/repo). SKIP_WHEELS=1 skips the downloads.
set -euo pipefail
cd "$(dirname "$0")/../.."
KB_MIRROR="${1:-/work/.mirror/ScalingIntelligence+KernelBench/repo}"
KG_MIRROR="${2:-/work/.mirror/hkust-nlp+KernelGYM/repo}"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
for p in /.kb/ /.whl/; do grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >> "$exclude"; done

rm -rf .kb && mkdir -p .kb/KernelBench .kb/KernelGYM .kb/redis/lib
# KernelBench: levels 1 and 2 and the harness modules (not its prompts, scripts or results).
git --git-dir="$KB_MIRROR" archive HEAD KernelBench/level1 KernelBench/level2 src/kernelbench \
  | tar -x -C .kb/KernelBench --exclude='src/kernelbench/prompts' --exclude='src/kernelbench/unit_tests'
# KernelGYM: its Python package only (no stale bytecode); skipped where no mirror was fetched (the KernelGYM runner
# then fails to start and the others run on).
if [ -d "$KG_MIRROR" ]; then
  git --git-dir="$KG_MIRROR" archive HEAD kernelgym | tar -x -C .kb/KernelGYM --exclude='__pycache__'
fi
# redis-server and the libraries it loads beyond glibc and the C++ runtime (the GPU machine runs another
# distribution; run_kernelbench_h200.sh points LD_LIBRARY_PATH at .kb/redis/lib for redis-server alone).
rs="$(command -v redis-server)"
cp -L "$rs" .kb/redis/redis-server
ldd "$rs" | awk '$3 ~ /^\// {print $3}' \
  | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' \
  | xargs -r -I{} cp -L {} .kb/redis/lib/
strip .kb/redis/redis-server 2>/dev/null || true
{
  echo "KernelBench $(git --git-dir="$KB_MIRROR" rev-parse HEAD)"
  echo "KernelGYM $(git --git-dir="$KG_MIRROR" rev-parse HEAD 2>/dev/null || echo 'not fetched')"
  echo "redis-server $("$rs" --version)"
} > .kb/SOURCES.txt

if [ "${SKIP_WHEELS:-0}" != 1 ]; then
  rm -rf .whl && mkdir -p .whl
  # One version of each; --no-deps, so every dependency the GPU machine lacks is named (KINDS.md lists what it has:
  # anyio, click, h11, uvloop, httpx, psutil, numpy, typing-extensions are there). typing-extensions is not carried:
  # a carried 4.14 shadowed the machine's newer one, whose `sentinel` its anyio imports, and KernelGYM's server
  # answered 500 to every request (run of 2026-12-05 08:40Z).
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl \
    fastapi==0.115.12 starlette==0.46.2 pydantic==2.11.7 pydantic-core==2.33.2 annotated-types==0.7.0 \
    typing-inspection==0.4.1 pydantic-settings==2.10.1 python-dotenv==1.0.0 uvicorn==0.24.0 redis==5.0.1
fi
du -sh .kb .whl 2>/dev/null
cat .kb/SOURCES.txt
