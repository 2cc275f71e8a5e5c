#!/usr/bin/env bash
# The production-shape demo on one GPU (device tool): a random-init Qwen3 of the 1.7 B shape through kgym sft on
# our generated data (examples/train/sft_1p7b_qwen3.yaml; greedy answers graded by the gym at KernelBench sizes),
# then kgym train at the seeds' batch, 16 prompts x 16 rollouts x up to 3 turns, the gym on the same GPU
# (examples/train/rl_1p7b_seeds.yaml). The GPU is sampled by nvidia-smi every 200 ms; stage windows are marked.
#   OUT=DIR bash bench/train/demo_1p7b.sh          expects build/gpu/ from bench/gpu/pack.sh
# Rehearsal on the CPU (a small Qwen3, the torch solutions, the CPU gym):
#   KGYM=build/src/cli/kgym KGYM_PYTHON=<python with torch 2 + transformers> REHEARSE=1 OUT=/tmp/demo bash ...
set -uo pipefail
OUT="${OUT:-/tmp/kgym-demo}"
RUNS="${RUNS:-/tmp/kgym-demo-runs}"
mkdir -p "$OUT" "$RUNS"
B=$PWD/build/gpu
K="${KGYM:-$B/kgym}"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KGYM_PYTHON="${KGYM_PYTHON:-python3}" KGYM_HARNESS_PATH="$PWD/python" PYTHONUNBUFFERED=1
TASKS="level1/ level2/"
KINDS="triton lazy"
SFT_X=() RL_X=()
if [ "${REHEARSE:-0}" = 1 ]; then
  TASKS="level1/relu level1/softmax level1/rmsnorm" KINDS="torch"
  SHAPE=(model.init.hidden_size=128 model.init.intermediate_size=256 model.init.num_hidden_layers=2
         model.init.num_attention_heads=4 model.init.num_key_value_heads=2 model.init.head_dim=32
         model.init.vocab_size=4200 trainer.device=cpu data.train_batch_size=3)
  SFT_X=("${SHAPE[@]}" trainer.total_training_steps=60 optim.lr=3e-3 eval.size=small gym.device=cpu
         "eval.only=[level1/relu,level1/softmax,level1/rmsnorm]" eval.num_perf_trials=3 model.dtype=fp32)
  RL_X=(trainer.device=cpu gym.device=cpu gym.size=small "data.only=[level1/relu,level1/softmax,level1/rmsnorm]"
        data.train_batch_size=3 rollout.n=4 rollout.max_turns=2 rollout.response_length=512 gym.num_perf_trials=3
        trainer.total_training_steps=2 model.dtype=fp32 rollout.kv_cache_gb=0.25 learner.startup_timeout=300)
fi
mark() { echo "$1 $(date -u +%FT%T.%3N)" >> "$RUNS/stages.txt"; }
{
  echo "tree: $(cat "$B/commit.txt" 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU"
  "$KGYM_PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} > "$OUT/machine.txt" 2>&1
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 200 \
    > "$RUNS/gpu_util.csv" 2>/dev/null &
  SMI=$!
  trap 'kill $SMI 2>/dev/null' EXIT
fi

# 1. Data and SFT (the final model's greedy answers are graded by the gym: sft/eval/grade.json).
mark sft_start
"$K" data sft --tasks tasks --solutions tasks/solutions --kinds $KINDS --only $TASKS --out "$RUNS/sft.jsonl" \
  2>> "$OUT/summary.txt"
timeout "${SFT_TIMEOUT:-420}" "$K" sft --config examples/train/sft_1p7b_qwen3.yaml "trainer.out_dir=$RUNS/sft" \
  "data.train_files=[$RUNS/sft.jsonl]" "${SFT_X[@]}" ${SFT_ARGS:-} > "$RUNS/sft_stdout.txt" 2> "$RUNS/sft_stderr.txt"
echo "sft exit $?" >> "$OUT/summary.txt"
mark sft_end

# 2. RL at the seeds' batch from the SFT model.
mark rl_start
timeout "${RL_TIMEOUT:-420}" "$K" train --config examples/train/rl_1p7b_seeds.yaml "model.path=$RUNS/sft/final" \
  "trainer.out_dir=$RUNS/rl" "${RL_X[@]}" ${RL_ARGS:-} > "$RUNS/rl_stdout.txt" 2> "$RUNS/rl_stderr.txt"
echo "rl exit $?" >> "$OUT/summary.txt"
mark rl_end

kill "${SMI:-0}" 2>/dev/null
tar czf "$OUT/demo.tgz" -C "$RUNS" --exclude='checkpoints' --exclude='final' --exclude='weights' \
  --exclude='tensorboard' --exclude='model' . 2>/dev/null
python3 bench/train/summarize.py "$RUNS" --json "$OUT/demo.json" >> "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
tail -5 "$RUNS/sft_stderr.txt" "$RUNS/rl_stderr.txt"
