#!/usr/bin/env bash
# One GPU run on the lent H200 (through the device tool): doctor, one evaluation in full, the whole task suite,
# and the eval-overhead benchmark. Expects stripped binaries and their shared libraries carried from the development machine in build/gpu/
# (made by bench/gpu/pack.sh). Raw results go to $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/kgym-gpu-out}"
mkdir -p "$OUT"
B=build/gpu
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KGYM_PYTHON="${KGYM_PYTHON:-python3}"
export KGYM_HARNESS_PATH="$PWD/python"
K="$B/kgym"
{
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || cat .git-commit 2>/dev/null)"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/machine.txt" 2>&1
timeout 120 "$K" doctor > "$OUT/doctor.txt" 2>&1
echo "doctor rc=$?" >> "$OUT/doctor.txt"
timeout 120 "$K" eval --ref tasks/level1/relu.py --kernel tasks/solutions/level1/relu_triton.py --pretty \
  > "$OUT/one_eval.json" 2> "$OUT/one_eval.stderr"
echo "one eval rc=$?" >> "$OUT/one_eval.stderr"
timeout "${SUITE_TIMEOUT:-330}" "$K" suite --tasks tasks --device cuda --jobs 4 --out "$OUT/suite.json" \
  > "$OUT/suite.md" 2> "$OUT/suite.stderr"
echo "suite rc=$?" >> "$OUT/suite.stderr"
timeout 150 "$B/eval_overhead" --device cuda -n 20 --baseline-n 5 \
  --out "$OUT/eval_overhead-h200.json" > "$OUT/eval_overhead.md" 2>&1
echo "overhead rc=$?" >> "$OUT/eval_overhead.md"
tail -3 "$OUT/suite.md"; cat "$OUT/eval_overhead.md"
