#!/usr/bin/env bash
# Several KernelBench-mode runs and checks in one device call, each stage's output packed into $OUT/<stage>.tgz as
# soon as it ends (the device tool returns few files, and a call cut short still returns what was packed):
#   l2      level 2, problems $L2_PROBLEMS, kgym at slots $SLOTS (the first is the main setting, the rest the sweep
#           for the plot of evaluations per GPU-hour against slots), then level 1 ($L1_PROBLEMS) at the first setting
#   l2wide  level 2, the eight-problem mix ($WIDE_PROBLEMS) at the first slot setting
#   l1      level 1 alone ($L1_PROBLEMS) at the first slot setting (with its options: "16:lent0")
#   redteam the GPU red team and the timing sanity check (bench/gpu/run_session.sh)
#   dist    tests/py/test_train_distributed.py on this machine's torch (FSDP2 on >= 2.4), on the CPU
# Needs what run_kernelbench_h200.sh needs (build/gpu, .kb, .whl). KGYM_TRACE_TIMING=1 adds per-call traces.
set -uo pipefail
OUT="${OUT:-/tmp/kgym-stages}"
cd "$(dirname "$0")/../.."
STAGES="${STAGES:-l2 redteam l2wide dist}"
SLOTS="${SLOTS:-16 24 8}"
L2_PROBLEMS="${L2_PROBLEMS:-9,12,14,18}" L1_PROBLEMS="${L1_PROBLEMS:-1,40,57}"
WIDE_PROBLEMS="${WIDE_PROBLEMS:-1,9,12,14,18,23,28,33}"
main=${SLOTS%% *} sweep=${SLOTS#"$main"}
runners="kgym:$main"; for s in $sweep; do runners="$runners,kgym:$s"; done
for st in $STAGES; do
  t0=$(date +%s)
  R="$OUT/$st"; mkdir -p "$R"
  case $st in
    l2) LEVELS="2 1" L2_PROBLEMS="$L2_PROBLEMS" L1_PROBLEMS="$L1_PROBLEMS" L2_RUNNERS="$runners" SLOTS_MAIN="$main" \
          SLOTS_SWEEP="$sweep" B_MAIN="${B_MAIN:-100}" B_SWEEP="${B_SWEEP:-80}" B_L1="${B_L1:-100}" OUT="$R" \
          bash bench/throughput/run_kernelbench_h200.sh > "$R/log.txt" 2>&1 ;;
    l2wide) LEVELS=2 L2_PROBLEMS="$WIDE_PROBLEMS" L2_RUNNERS="kgym:$main" SLOTS_MAIN="$main" SLOTS_SWEEP="" \
          B_MAIN="${B_WIDE:-130}" OUT="$R" bash bench/throughput/run_kernelbench_h200.sh > "$R/log.txt" 2>&1 ;;
    l1) LEVELS=1 L1_PROBLEMS="$L1_PROBLEMS" L1_RUNNER="kgym:$main" B_L1="${B_L1:-100}" OUT="$R" \
          bash bench/throughput/run_kernelbench_h200.sh > "$R/log.txt" 2>&1 ;;
    redteam) OUT="$R" STAGES="sanity redteam" bash bench/gpu/run_session.sh > "$R/log.txt" 2>&1 ;;
    dist) B=$PWD/build/gpu
          python3 -m pip install -q --no-index --target /tmp/kgym-pytest "$B"/wheels/*.whl > "$R/log.txt" 2>&1
          LD_LIBRARY_PATH="$B/lib" KGYM_BIN="$B/kgym" KGYM_PYTHON=python3 PYTHONPATH="$PWD/python:/tmp/kgym-pytest" \
            CUDA_VISIBLE_DEVICES= timeout "${DIST_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider \
            tests/py/test_train_distributed.py >> "$R/log.txt" 2>&1 ;;
    *) echo "unknown stage $st" > "$R/log.txt" ;;
  esac
  echo "$st: rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/stages.txt"
  tar czf "$OUT/$st.tgz" -C "$OUT" "$st" && rm -rf "$R"
done
