#!/usr/bin/env bash
# Issue 32 on one GPU in one device call (at most 9 minutes: 300 s + 2 x 90 s + 50 s; DEVICE=cpu rehearses it):
#   1. bench/gpu/gym_under_load.py: the neighbour test (the victim alone, beside GPU-heavy __init__ aggressors, beside
#      an RL group of 16 autotuning Triton candidates) and the precision test (TF32 / bf16 / IEEE Triton GEMMs under
#      strict and compat), through kgym serve --slots-per-gpu 16. NOFREEZE=1 adds the runs without freezing.
#   2. adaptive trials on the level-2 mix (problems 9, 12, 14, 18; 16 candidates each): kgym:16 (adaptive, the
#      default) against kgym:16:minperf0 (every one of the 100 timed calls), compared by bench/gpu/adaptive_report.py.
# Needs, carried into the working tree: build/gpu (bench/gpu/pack.sh) and .kb (bench/throughput/
# materialize_kernelbench.sh; only the KernelBench checkout .kb/KernelBench is read: KB_DIR). Writes $OUT/machine.txt, under_load.{json,md},
# kb_l2_adaptive.json, adaptive.{json,md} and summary.md (the tables), each as soon as its part ends.
#   Here first:          bash bench/gpu/pack.sh && SKIP_WHEELS=1 bash bench/throughput/materialize_kernelbench.sh
#   On the GPU machine:  OUT=$OUT bash bench/gpu/run_gym_under_load.sh   (device tool: carry build/gpu, .kb/KernelBench)
#   Rehearsal here:      DEVICE=cpu KGYM_BIN=build/src/cli/kgym OUT=/tmp/ul bash bench/gpu/run_gym_under_load.sh
#   References renamed as candidates under strict (a call of its own, level 2 then level 1):
#                        PARTS=renamed LEVELS=2 B_UNDER_LOAD=540 SKIP_ADAPTIVE=1 OUT=$OUT bash bench/gpu/run_gym_under_load.sh
set -uo pipefail
OUT="${OUT:-/tmp/kgym-under-load-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
DEVICE="${DEVICE:-cuda}" KB_DIR="${KB_DIR:-.kb/KernelBench}" PARTS="${PARTS:-neighbour,precision}"
B_ADAPTIVE="${B_ADAPTIVE:-90}"  # seconds per runner; the under-load part gets B_UNDER_LOAD (300): <= 9 min in all
. bench/gpu/kgym_env.sh
machine_facts > "$OUT/machine.txt"
cat "$OUT/machine.txt"
if [ "$DEVICE" = cpu ]; then GPUARGS=(--device cpu); TP=(--gpus none --size small); else GPUARGS=(--device cuda --gpu 0); TP=(--gpus 0); fi
t0=$(date +%s)
timeout "${B_UNDER_LOAD:-300}" "$PY" bench/gpu/gym_under_load.py --bin "$KGYM_BIN" --kb "$KB_DIR" --slots "${SLOTS:-16}" \
  "${GPUARGS[@]}" --parts "$PARTS" --levels "${LEVELS:-1,2}" ${NOFREEZE:+--nofreeze} --out "$OUT/under_load.json" \
  > "$OUT/under_load.md" 2> "$OUT/under_load.stderr"
echo "under load: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/under_load.md"
t0=$(date +%s)
if [ -n "${SKIP_ADAPTIVE:-}" ]; then
  echo "adaptive: skipped" > "$OUT/adaptive.md"
elif [ -d "$KB_DIR" ]; then
  timeout $(( 2 * B_ADAPTIVE + 50 )) "$PY" bench/throughput/run_throughput.py --bin "$KGYM_BIN" --kernelbench "$KB_DIR" \
    "${TP[@]}" --clients 32 --correct-trials 5 --perf-trials 100 --python "$PY" --level 2 \
    --problems "${L2_PROBLEMS:-9,12,14,18}" --runners kgym:16,kgym:16:minperf0 \
    --budget "kgym:16=$B_ADAPTIVE" --budget "kgym:16:minperf0=$B_ADAPTIVE" \
    --out "$OUT/kb_l2_adaptive.json" > "$OUT/adaptive.md" 2> "$OUT/adaptive.stderr"
  echo "adaptive: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/adaptive.md"
  "$PY" bench/gpu/adaptive_report.py "$OUT/kb_l2_adaptive.json" --json "$OUT/adaptive.json" >> "$OUT/adaptive.md"
else
  echo "adaptive: no KernelBench checkout at $KB_DIR (bench/throughput/materialize_kernelbench.sh)" | tee "$OUT/adaptive.md"
fi
cat "$OUT/under_load.md" "$OUT/adaptive.md" > "$OUT/summary.md"
cat "$OUT/summary.md"
