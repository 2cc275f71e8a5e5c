#!/usr/bin/env bash
# Issue 41's engine half on one GPU in one device call (≈ 6 minutes on an H100): the engine's kernels' GPU tests, the
# paged decode kernel against FlashAttention on a contiguous cache, the RL shape (16 prompts x 16 samples, 1 536-token
# prompts, drawn response lengths, 24 GiB of KV), where a decode step's time goes (decode_profile.py), and the uniform
# curve with greedy identity and the bf16 log-prob mismatch. Each stage
# writes its JSON into $OUT as it ends, so a cut call keeps what finished.
#   OUT=DIR bash bench/train/run_rl_engine.sh            on the GPU machine (its python3 has torch 2 + transformers)
#   REHEARSE=1 OUT=DIR bash bench/train/run_rl_engine.sh on the CPU (tiny shapes; checks every stage runs)
# Name the tree in KGYM_TREE=$(git rev-parse HEAD) on the command line: the device's copy of .git can be stale.
# Carry build/pytest-whl (pytest's wheels: pip download pytest pluggy iniconfig packaging) for the GPU tests stage.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/kgym-rl-engine}"
mkdir -p "$OUT"
PY="${KGYM_PYTHON:-python3}"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
R=()
[ "${REHEARSE:-0}" = 1 ] && R=(--rehearse)
{
  echo "tree: ${KGYM_TREE:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU"
  "$PY" -c "import torch; print('torch', torch.__version__)" 2>&1
} > "$OUT/machine.txt"
stage() {  # name, timeout seconds, command...
  local name=$1 limit=$2; shift 2
  echo "== $name $(date -u +%T)" | tee -a "$OUT/summary.txt"
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name exit $?" >> "$OUT/summary.txt"
  tail -4 "$OUT/$name.log" | tee -a "$OUT/summary.txt"
}
if [ -d build/pytest-whl ] && ! "$PY" -c "import pytest" 2>/dev/null; then  # the GPU machine's Python has no pytest
  "$PY" -m pip install -q --no-index --target /tmp/kgym-pytest build/pytest-whl/*.whl > /dev/null 2>&1
  export PYTHONPATH="$PYTHONPATH:/tmp/kgym-pytest"
fi
stage gpu_tests "${T_TESTS:-90}" "$PY" -m pytest -q -p no:cacheprovider tests/py/test_paged_attention.py \
  tests/py/test_sample_kernel.py tests/py/test_fused_project.py tests/py/test_train_rollout.py -k "not served_chat and not interpreter"
if [ -f bench/train/paged_decode_speed.py ]; then
  stage paged_decode "${T_KERNEL:-90}" "$PY" bench/train/paged_decode_speed.py --out "$OUT" "${R[@]}"
fi
stage rl_shape "${T_SHAPE:-240}" "$PY" bench/train/rl_shape.py --out "$OUT" --kv-gb "${KV_GB:-24}" "${R[@]}"
stage decode_profile "${T_PROFILE:-60}" "$PY" bench/train/decode_profile.py --out "$OUT" --batches 64,1 "${R[@]}"
if [ "${REHEARSE:-0}" = 1 ]; then
  stage rollout_speed 300 "$PY" bench/train/rollout_speed.py --out "$OUT" --batches 1,4 --prompt 32 --new 32 \
    --skip-hf --rehearse
else
  stage rollout_speed "${T_CURVE:-240}" "$PY" bench/train/rollout_speed.py --out "$OUT" \
    --batches "${BATCHES:-1,8,32,64,128,256}" --skip-hf
fi
cat "$OUT/summary.txt"
