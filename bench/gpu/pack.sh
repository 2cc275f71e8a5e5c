#!/usr/bin/env bash
# Packs what bench/gpu/run.sh needs on the GPU machine into build/gpu/: stripped kgym and eval_overhead plus the
# non-glibc shared libraries they load (the GPU machine runs another distribution).
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf build/gpu && mkdir -p build/gpu/lib
strip -o build/gpu/kgym build/src/cli/kgym
strip -o build/gpu/eval_overhead build/bench/eval_overhead/eval_overhead
strip -o build/gpu/compare_cost build/bench/compare_cost/compare_cost
for b in build/gpu/kgym build/gpu/eval_overhead build/gpu/compare_cost; do
  # (grep finds nothing for a program that needs only glibc's libraries: not an error)
  ldd "$b" | awk '$3 ~ /^\// {print $3}' | { grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' || true; } \
    | xargs -r -I{} cp -L -n {} build/gpu/lib/
done
# The kernel recorder (kgym finds it at lib/ next to itself); libcupti itself comes from the GPU machine's toolkit.
if [ -f build/src/gpu/libkgym_cupti.so ]; then strip -o build/gpu/lib/libkgym_cupti.so build/src/gpu/libkgym_cupti.so
else echo "pack: no libkgym_cupti.so (GPU times will be the supervisor's brackets)"; fi
# The Python packages kgym runs (kgym finds them at share/kgym/python next to itself; src/core/runtime_files.h).
mkdir -p build/gpu/share && cp -r build/share/kgym build/gpu/share/
du -sh build/gpu
# pytest for the GPU red-team cases (the GPU machine's Python has none), and the tree's commit (no .git there).
mkdir -p build/gpu/wheels
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform any -d build/gpu/wheels \
  pytest pluggy iniconfig packaging 2>/dev/null || echo "pack: no pytest wheels (the red-team stage will need pytest)"
{ git rev-parse HEAD; git status --short | head -20; } > build/gpu/commit.txt 2>/dev/null || true
du -sh build/gpu
