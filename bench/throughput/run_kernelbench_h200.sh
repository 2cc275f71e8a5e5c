#!/usr/bin/env bash
# KernelBench's own problems on one H200, in one command:
#   1. level 2, the same problems and candidates (kb_mix.py: 16 per problem) through kgym serve (slots $SLOTS_MAIN),
#      KernelBench's harness (a fresh process per evaluation) and KernelGYM's server and worker, then kgym at the
#      other slot settings ($SLOTS_SWEEP) for the plot of evaluations per GPU-hour against slots;
#   2. level 1 at KernelBench's sizes through kgym at the best slot setting: wall per evaluation against its pure
#      GPU work.
# PROBE=1 runs data_path_probe.py first; L2_RUNNERS overrides the level-2 runners, L1_RUNNER the level-1 one. LEVELS picks the parts ("2 1", the default; "2" or "1" alone fit the device tool's 10-minute call with the red team
# beside level 1). Every runner has a time budget (seconds, below): a runner cut short says so in its summary (done/candidates).
# Needs, carried into the working tree: build/gpu (bench/gpu/pack.sh), .kb and .whl
# (bench/throughput/materialize_kernelbench.sh). Writes to $OUT: machine.txt, kb_l2.json, kb_l2_slots.png, kb_l1.json,
# summary.md, logs.tgz. A rehearsal on a CPU: GPUS=none WHEELS=none KB_DIR=<small folder> EXTRA="--size small".
set -uo pipefail
OUT="${OUT:-/tmp/kgym-kb-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
B=$PWD/build/gpu
L2_PROBLEMS="${L2_PROBLEMS:-12}" L1_PROBLEMS="${L1_PROBLEMS:-1,40,57}"
SLOTS_MAIN="${SLOTS_MAIN:-4}" SLOTS_SWEEP="${SLOTS_SWEEP:-1 8}"
B_MAIN="${B_MAIN:-100}" B_KB="${B_KB:-130}" B_KGYM="${B_KGYM:-160}" B_SWEEP="${B_SWEEP:-35}" B_L1="${B_L1:-50}"
LEVELS="${LEVELS:-2 1}"
PROBE="${PROBE:-0}"  # 1: bench/throughput/data_path_probe.py first (the worker's data path per output size)
KB_DIR="${KB_DIR:-.kb/KernelBench}" GPUS="${GPUS:-0}" WHEELS="${WHEELS:-.whl}" EXTRA="${EXTRA:-}"
LOGS=/tmp/kgym-kb-logs
rm -rf "$LOGS" && mkdir -p "$LOGS"

# kgym and the libraries it was built with (Debian's), for kgym alone; its commit as packed.
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/kgym" "$@"\n' "$B" "$B" \
  > /tmp/kgym
chmod +x /tmp/kgym
export KGYM_PYTHON=python3 KGYM_HARNESS_PATH="$PWD/python" PYTHONUNBUFFERED=1
KGYM_BENCH_COMMIT="$(head -1 "$B/commit.txt" 2>/dev/null | cut -c1-12)"; export KGYM_BENCH_COMMIT
# KernelGYM's and KernelBench's missing packages, for their processes (kgym's workers get a scrubbed environment).
if [ "$WHEELS" != none ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl \
    && export PYTHONPATH=/tmp/site || { echo "wheels did not install"; exit 1; }
fi
{
  echo "tree: $(cat "$B/commit.txt" 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, fastapi, pydantic, redis; print('torch', torch.__version__, 'triton',
    triton.__version__, 'fastapi', fastapi.__version__, 'pydantic', pydantic.VERSION, 'redis-py', redis.__version__)"
  LD_LIBRARY_PATH=.kb/redis/lib .kb/redis/redis-server --version
  cat .kb/SOURCES.txt; nproc; free -g | head -2
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if [ "$PROBE" = 1 ]; then
  timeout 240 python3 bench/throughput/data_path_probe.py --out "$OUT/data_path_probe.json" > "$OUT/data_path_probe.txt" 2>&1
  echo "data path probe: rc=$?"; cat "$OUT/data_path_probe.txt"
fi

sweep=""; for s in $SLOTS_SWEEP; do sweep="$sweep,kgym:$s"; done
# L2_RUNNERS: the level-2 runners (default: kgym at $SLOTS_MAIN, KernelBench's harness, KernelGYM, the sweep).
L2_RUNNERS="${L2_RUNNERS:-kgym:$SLOTS_MAIN,kernelbench,kernelgym$sweep}"
budgets=(--budget "kgym:$SLOTS_MAIN=$B_MAIN" --budget "kernelbench=$B_KB" --budget "kernelgym=$B_KGYM")
for s in $SLOTS_SWEEP; do budgets+=(--budget "kgym:$s=$B_SWEEP"); done
COMMON=(--bin /tmp/kgym --kernelbench "$KB_DIR" --gpus "$GPUS" --clients 32 --correct-trials 5 --perf-trials 100
        --python python3 --kernelgym .kb/KernelGYM --redis-server .kb/redis/redis-server $EXTRA)
t0=$(date +%s)
if [[ " $LEVELS " == *" 2 "* ]]; then
timeout 470 python3 bench/throughput/run_throughput.py "${COMMON[@]}" --level 2 --problems "$L2_PROBLEMS" \
  --runners "$L2_RUNNERS" "${budgets[@]}" --logs "$LOGS/l2" \
  --out "$OUT/kb_l2.json" --plot "$OUT/kb_l2_slots.png" > "$OUT/summary.md" 2> "$LOGS/l2.stderr"
echo "level 2: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.md"
fi

best=$(python3 -c "
import json, sys
s = [x for x in json.load(open(sys.argv[1]))['summaries'] if x['runner'] == 'kgym' and x['evals_per_gpu_hour']]
print(max(s, key=lambda x: x['evals_per_gpu_hour'])['setting']['slots'])" "$OUT/kb_l2.json" 2>/dev/null \
  || echo "$SLOTS_MAIN")
t0=$(date +%s)
if [[ " $LEVELS " == *" 1 "* ]]; then
timeout $(( B_L1 + 40 )) python3 bench/throughput/run_throughput.py "${COMMON[@]}" --level 1 --problems "$L1_PROBLEMS" \
  --per-problem 3 --correct-only --runners "${L1_RUNNER:-kgym:$best}" --budget "kgym=$B_L1" --logs "$LOGS/l1" \
  --out "$OUT/kb_l1.json" >> "$OUT/summary.md" 2> "$LOGS/l1.stderr"
echo "level 1 (kgym slots $best): rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.md"
fi
tar czf "$OUT/logs.tgz" --exclude="*.sqlite*" -C /tmp kgym-kb-logs 2>/dev/null
cat "$OUT/summary.md"
