#!/usr/bin/env bash
# Issue 40's measurement in one device call of at most 9 minutes (bench/gpu/gym_limit.py: kgym serve at each slot count
# of $SLOTS, a warm and a measured pass each, then KernelBench's harness), writing $OUT/gym_limit.json,
# $OUT/summary.md and $OUT/machine.txt, and packing the servers' logs into $OUT/logs.tgz.
#   Here first:          bash bench/gpu/pack.sh && bash bench/throughput/materialize_kernelbench.sh
#   On the GPU machine:  OUT=$OUT bash bench/gpu/run_gym_limit.sh   (device tool: carry build/gpu, .kb, .whl)
#   Rehearsal here:      DEVICE=cpu KGYM_BIN=build/src/cli/kgym OUT=/tmp/gl bash bench/gpu/run_gym_limit.sh
# Settings: SLOTS (8,16,32), COPIES (3), BUDGET / WARM_BUDGET / KB_BUDGET (seconds per pass), L1, L2 (problem ids),
# NEIGHBOUR=1 adds bench/gpu/gym_under_load.py's neighbour part (the victim within 1 %, 0 false hacks).
set -uo pipefail
OUT="${OUT:-/tmp/kgym-gym-limit}"
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
DEVICE="${DEVICE:-cuda}" KB_DIR="${KB_DIR:-.kb/KernelBench}"
. bench/gpu/kgym_env.sh
# KernelBench's harness needs pydantic and python-dotenv, which the GPU machine lacks (kgym's workers get a scrubbed
# environment, so this reaches KernelBench's processes alone).
if [ "$DEVICE" = cuda ] && [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
machine_facts > "$OUT/machine.txt"
cat "$OUT/machine.txt"
t0=$(date +%s)
timeout "${TOTAL:-500}" "$PY" bench/gpu/gym_limit.py --bin "$KGYM_BIN" --kernelbench "$KB_DIR" --device "$DEVICE" \
  --slots "${SLOTS:-8,16,32}" --copies "${COPIES:-3}" --budget "${BUDGET:-90}" --warm-budget "${WARM_BUDGET:-60}" \
  --kb-budget "${KB_BUDGET:-80}" ${L1:+--l1 "$L1"} ${L2:+--l2 "$L2"} --python "$PY" --out "$OUT" \
  > "$OUT/summary.md" 2> "$OUT/gym_limit.stderr"
echo "gym limit: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.md"
if [ "${NEIGHBOUR:-0}" = 1 ]; then
  t0=$(date +%s)
  if [ "$DEVICE" = cpu ]; then GA=(--device cpu); else GA=(--device cuda --gpu 0); fi
  timeout "${B_NEIGHBOUR:-150}" "$PY" bench/gpu/gym_under_load.py --bin "$KGYM_BIN" --kb "$KB_DIR" --slots 16 \
    "${GA[@]}" --parts neighbour --out "$OUT/under_load.json" > "$OUT/under_load.md" 2> "$OUT/under_load.stderr"
  echo "neighbour: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/under_load.md"
  cat "$OUT/under_load.md" >> "$OUT/summary.md"
fi
logs=$(sed -n 's/.*(logs in \(.*\))$/\1/p' "$OUT/summary.md" | tail -1)
[ -n "$logs" ] && [ -d "$logs" ] && tar czf "$OUT/logs.tgz" --exclude='*.sqlite*' --exclude=kb-build -C "$logs" . 2>/dev/null
cat "$OUT/summary.md"
