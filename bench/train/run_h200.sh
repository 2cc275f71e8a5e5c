#!/usr/bin/env bash
# The training proofs on the H200 (device tool), stage by stage (STAGES, default "sft rl"):
#   sft      kgym data sft (27 conversations from tasks/solutions) -> kgym sft (examples/train/sft_tiny_qwen3.yaml)
#            -> the final model's greedy answers graded by the gym on all 24 tasks
#   rl       kgym train (examples/train/rl_fast_vs_lazy.yaml) from that checkpoint, real gym rewards
#   control  the same with algorithm.reward_shuffle=true
#   arms     rl and control at once, both evaluated by one kgym serve on the GPU (one timing lock for the two)
#   layout   two short runs, rollout.layout=lockstep and =concurrent, for the step time and timing noise
# Every stage also needs sft's checkpoint, so a call that runs rl or control without sft first runs sft too.
# Expects build/gpu/ from bench/gpu/pack.sh. Raw results go to $OUT (one tarball per stage, summary.txt); the GPU
# is sampled by nvidia-smi every 250 ms throughout (gpu_util.csv inside each tarball, with the stage's window).
set -uo pipefail
OUT="${OUT:-/tmp/kgym-train-out}"
mkdir -p "$OUT"
B=$PWD/build/gpu
RUNS="${RUNS:-/tmp/kgym-runs}"
mkdir -p "$RUNS"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KGYM_PYTHON="${KGYM_PYTHON:-python3}" KGYM_HARNESS_PATH="$PWD/python" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
K="$B/kgym"
. "$(dirname "$0")/gym_serve.sh"  # start_gym
STAGES="${STAGES:-sft rl}"
ARMS="${ARMS:-rl: control:algorithm.reward_shuffle=true}"
{
  echo "tree: $(cat "$B/commit.txt" 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  echo "stages: $STAGES"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)"
  nproc; free -g | head -2
} > "$OUT/machine.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 > "$RUNS/gpu_util.csv" 2>/dev/null &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

mark() { echo "$1 $(date -u +%FT%T.%3N)" >> "$RUNS/stages.txt"; }
pack() {  # pack <name> <dir>: the run folder's small files, the GPU samples and the stage windows
  cp "$RUNS/gpu_util.csv" "$RUNS/stages.txt" "$2/" 2>/dev/null
  tar czf "$OUT/$1.tgz" -C "$2" --exclude='checkpoints' --exclude='final' --exclude='tokenizer' --exclude='weights' \
    --exclude='tensorboard' . 2>/dev/null
}
sft() {
  [ -f "$RUNS/sft/final/config.json" ] && return 0
  mark sft_start
  "$K" data sft --tasks tasks --solutions tasks/solutions --kinds triton,lazy --out "$RUNS/sft.jsonl" 2>> "$OUT/summary.txt"
  timeout "${SFT_TIMEOUT:-300}" "$K" sft --config examples/train/sft_tiny_qwen3.yaml "trainer.out_dir=$RUNS/sft" \
    "data.train_files=[$RUNS/sft.jsonl]" ${SFT_ARGS:-} > "$RUNS/sft_stdout.json" 2> "$RUNS/sft_stderr.txt"
  echo "sft exit $?" >> "$OUT/summary.txt"
  mark sft_end
  cp "$RUNS/sft_stdout.json" "$RUNS/sft_stderr.txt" "$RUNS/sft/" 2>/dev/null
  pack sft "$RUNS/sft"
}
rl() {  # rl <name> [overrides...]
  local name=$1; shift
  mark "${name}_start"
  timeout "${RL_TIMEOUT:-280}" "$K" train --config examples/train/rl_fast_vs_lazy.yaml "model.path=$RUNS/sft/final" \
    "trainer.out_dir=$RUNS/$name" "$@" ${RL_ARGS:-} > "$RUNS/$name.stdout" 2> "$RUNS/$name.stderr"
  echo "$name exit $?" >> "$OUT/summary.txt"
  mark "${name}_end"
  mkdir -p "$RUNS/$name" && cp "$RUNS/$name.stdout" "$RUNS/$name.stderr" "$RUNS/$name/" 2>/dev/null
  [ -n "${IN_ARMS:-}" ] || pack "$name" "$RUNS/$name"
}
arms() {  # ARMS="name:key=v,key=v name2:..." run at once, all evaluated by one kgym serve (one timing lock)
  : > "$RUNS/serve.log"
  start_gym "$RUNS/serve.log"
  local serve=$GYM_PID pids=() spec name
  for spec in $ARMS; do
    name=${spec%%:*}
    IFS=, read -r -a extra <<< "${spec#*:}"
    IN_ARMS=1 rl "$name" gym.server="$GYM_URL" "${extra[@]}" &
    pids+=($!)
  done
  wait "${pids[@]}"
  kill "$serve" 2>/dev/null; wait "$serve" 2>/dev/null
  cp "$RUNS/serve.log" "$RUNS/gym_serve.log" 2>/dev/null
}
for st in $STAGES; do
  case $st in
    sft) sft ;;
    rl) sft; rl rl ;;
    control) sft; rl control algorithm.reward_shuffle=true ;;
    arms) sft; arms ;;
    layout) sft; rl layout_lockstep trainer.total_training_steps=4 rollout.layout=lockstep
            rl layout_concurrent trainer.total_training_steps=4 rollout.layout=concurrent ;;
    *) echo "unknown stage $st" >> "$OUT/summary.txt" ;;
  esac
done
python3 bench/train/summarize.py "$RUNS" --json "$OUT/summary.json" >> "$OUT/summary.txt" 2>&1
if [[ " $STAGES " == *" arms "* ]]; then  # every arm's folder in one tarball (the device returns at most 8 files)
  names=$(for spec in $ARMS; do echo "${spec%%:*}"; done)
  cp "$RUNS/gpu_util.csv" "$RUNS/stages.txt" "$RUNS/gym_serve.log" "$RUNS/" 2>/dev/null
  tar czf "$OUT/arms.tgz" -C "$RUNS" --exclude='checkpoints' --exclude='weights' --exclude='tensorboard' \
    gpu_util.csv stages.txt $( [ -f "$RUNS/gym_serve.log" ] && echo gym_serve.log) $names 2>/dev/null
fi
for pair in ${PLOTS:-rl:control}; do  # run:control pairs
  a=${pair%%:*} b=${pair#*:}
  [ -f "$RUNS/$a/metrics.jsonl" ] && [ -f "$RUNS/$b/metrics.jsonl" ] && python3 bench/train/plot_rl.py \
    "$RUNS/$a/metrics.jsonl" "$RUNS/$b/metrics.jsonl" --out "$OUT/${a}_vs_${b}.png" >> "$OUT/summary.txt" 2>&1
done
cat "$OUT/summary.txt"
