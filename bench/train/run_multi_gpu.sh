#!/usr/bin/env bash
# Training across several GPUs (issue 19) on nvidia-h200-x2 or larger (device tool), stage by stage
# (STAGES, default "parity sft layout worker"); NGPUS (default: every visible GPU, at least 2):
#   parity  the learner's SFT and PPO steps on fixed synthetic rows (python -m kgym_train.parity) on 1 GPU, then
#           under torch.distributed.run on 2..NGPUS GPUs with FSDP2: fp32 (losses and gradient norms must agree
#           within 1e-4 relative) and the recipe's bf16 autocast (differences reported); seconds per step per GPU
#           count; an 0.2 B-parameter Qwen3 (random init), 32 rows of up to 2048 tokens
#   sft     kgym sft (examples/train/sft_tiny_qwen3.yaml, fp32) with trainer.nproc_per_node=1 and =2: train/loss of
#           every step, through kgym's own torchrun launcher
#   layout  kgym train (examples/train/rl_fast_vs_lazy.yaml, from the sft stage's nproc 1 model), the gym a kgym
#           serve on GPU 0 in both arms: "one" = learner on GPU 0 too, rollout.layout=lockstep; "split" = learner
#           on GPUs 1.. (trainer.devices, nproc_per_node = NGPUS-1), rollout.layout=concurrent. Evaluations per
#           hour and generated tokens per second of the whole loop (multi_gpu_report.py)
#   worker  a private redis-server, kgym serve --redis (the API node, no GPU), kgym worker --gpus 1 (the second
#           GPU as a second node), and a short kgym train whose learner is on GPU 0 and whose gym is that API
#           node: every evaluation crosses Redis; /workers/status and the worker's log are kept
# Every process gets NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 (exported here;
# kgym's learner launcher and python -m kgym_train set them again).
# Needs build/gpu/ (bench/gpu/pack.sh) and, for the worker stage, a redis-server: REDIS_SERVER, else
# build/gpu-redis/redis-server (bench/train/pack_redis.sh; the GPU machine has none), else one on PATH.
# DRY_RUN=1 rehearses every stage on the CPU (gloo, the tiny model, gym and workers on the CPU, 2 processes):
# the plumbing, not the numbers. Raw results in $OUT (one tarball per stage), the table in $OUT/summary.txt and
# $OUT/multi_gpu.json.
set -uo pipefail
OUT="${OUT:-/tmp/kgym-multi-out}"
RUNS="${RUNS:-/tmp/kgym-multi-runs}"
mkdir -p "$OUT" "$RUNS"
DRY="${DRY_RUN:-0}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export KGYM_HARNESS_PATH="$PWD/python" PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
if [ "$DRY" = 1 ]; then
  K="${KGYM_BIN:-$PWD/build/src/cli/kgym}"
  export KGYM_PYTHON="${KGYM_PYTHON:-/usr/bin/python3}"
  [ -d build/train-pkgs ] && export PYTHONPATH="$PYTHONPATH:$PWD/build/train-pkgs"
  NGPUS=2
else
  B=$PWD/build/gpu
  K="$B/kgym"
  export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KGYM_PYTHON="${KGYM_PYTHON:-python3}"
  NGPUS="${NGPUS:-$(nvidia-smi -L 2>/dev/null | wc -l)}"
fi
PY="$KGYM_PYTHON"
STAGES="${STAGES:-parity sft layout worker}"
TORCHRUN=(-m torch.distributed.run --standalone --redirects 1:1 --tee 1:1)  # the maps: see learner_process.h
ids() { seq -s, "$1" "$2"; }  # ids 0 1 -> 0,1
{
  echo "tree: $(cat "${B:-.}/commit.txt" 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"; echo "stages: $STAGES"; echo "ngpus: $NGPUS"; echo "dry_run: $DRY"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  nvidia-smi topo -m 2>/dev/null | head -5
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.device_count())"
  nproc; free -g | head -2
} > "$OUT/machine.txt" 2>&1
if [ "$DRY" != 1 ]; then
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 250 \
    > "$RUNS/gpu_util.csv" 2>/dev/null &
  SMI=$!
  trap 'kill $SMI 2>/dev/null' EXIT
fi
if [ "$NGPUS" -lt 2 ]; then echo "run_multi_gpu: needs 2 or more GPUs, sees $NGPUS" | tee -a "$OUT/summary.txt"; exit 2; fi

mark() { echo "$1 $(date -u +%FT%T.%3N)" >> "$RUNS/stages.txt"; }
pack() {  # pack <name> <dir...>: small files only (no checkpoints or weights)
  local name=$1; shift
  cp "$RUNS/gpu_util.csv" "$RUNS/stages.txt" "$RUNS/" 2>/dev/null
  tar czf "$OUT/$name.tgz" -C "$RUNS" --exclude='checkpoints' --exclude='final' --exclude='tokenizer' \
    --exclude='weights' --exclude='tensorboard' --exclude='*.pt' "$@" 2>/dev/null
}
wait_http() { "$PY" -c "
import sys, time, urllib.request
for _ in range(480):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=2); sys.exit(0)
    except Exception:
        time.sleep(0.5)
sys.exit(1)" "$1"; }

# ---- the model and device overrides of each stage -------------------------------------------------------------
if [ "$DRY" = 1 ]; then
  DEV=(trainer.device=cpu trainer.mixed_precision=none gym.device=cpu learner.startup_timeout=300)
  TINY=(model.init.arch=tiny model.init.hidden_size=64 model.init.intermediate_size=128 model.init.num_hidden_layers=2
        model.init.num_attention_heads=4 model.init.max_position_embeddings=4096 model.dtype=fp32
        tokenizer.vocab_size=512 model.gradient_checkpointing=false)
  PARITY_MODEL=("${TINY[@]}"); PARITY_ROWS=(--rows 12 --max-len 40 --steps 2)
  GPUS_OF() { :; }  # no trainer.devices on the CPU
  GYM_GPUS=(--gpus none --cpu-slots 2)
else
  DEV=()
  PARITY_MODEL=(model.init.arch=qwen3 model.init.hidden_size=1024 model.init.intermediate_size=3072
                model.init.num_hidden_layers=12 model.init.num_attention_heads=16 model.init.num_key_value_heads=8
                model.init.head_dim=64 model.init.max_position_embeddings=4096 model.dtype=fp32
                model.gradient_checkpointing=false tokenizer.vocab_size=4096)
  PARITY_ROWS=(--rows "${PARITY_NROWS:-32}" --max-len "${PARITY_LEN:-2048}" --steps 3)
  GPUS_OF() { echo "trainer.devices=[$1]"; }
  GYM_GPUS=(--gpus 0 --slots-per-gpu 8)
fi

parity() {
  mark parity_start
  local prec cfg n
  for prec in fp32 bf16; do
    cfg="$RUNS/parity/$prec.json"; mkdir -p "$RUNS/parity"
    local mp=none; [ "$prec" = bf16 ] && [ "$DRY" != 1 ] && mp=bf16
    "$K" train --print-config "${PARITY_MODEL[@]}" "${DEV[@]}" trainer.mixed_precision=$mp actor.optim.name=sgd \
      actor.optim.lr=0.1 "trainer.out_dir=$RUNS/parity/$prec" > "$cfg" 2>> "$OUT/summary.txt"
    for n in $(seq 1 "$NGPUS"); do
      local args=(kgym_train.parity --config "$cfg" --out "$RUNS/parity/${prec}_gpus$n.json" "${PARITY_ROWS[@]}")
      [ "$DRY" != 1 ] && export CUDA_VISIBLE_DEVICES=$(ids 0 $((n - 1)))
      if [ "$n" = 1 ]; then timeout 900 "$PY" -m "${args[@]}" > "$RUNS/parity/${prec}_gpus$n.log" 2>&1
      else timeout 900 "$PY" "${TORCHRUN[@]}" --nproc_per_node "$n" -m "${args[@]}" \
        > "$RUNS/parity/${prec}_gpus$n.log" 2>&1; fi
      echo "parity $prec gpus=$n exit $?" >> "$OUT/summary.txt"
      unset CUDA_VISIBLE_DEVICES
    done
  done
  mark parity_end
  pack parity parity
}

sft_data() {
  [ -f "$RUNS/sft.jsonl" ] || "$K" data sft --tasks tasks --solutions tasks/solutions --kinds triton,lazy \
    --out "$RUNS/sft.jsonl" 2>> "$OUT/summary.txt"
}
sft() {  # kgym sft with nproc 1 and 2 (fp32: the two loss curves must agree)
  sft_data
  mark sft_start
  local n extra
  for n in 1 2; do
    [ -f "$RUNS/sft_n$n/final/config.json" ] && continue
    extra=(); [ "$DRY" = 1 ] && extra=("${TINY[@]}" "${DEV[@]}" trainer.total_training_steps=2 data.max_length=512 data.truncation=left)
    [ "$DRY" != 1 ] && extra=("$(GPUS_OF "$(ids 0 $((n - 1)))")")
    timeout "${SFT_TIMEOUT:-600}" "$K" sft --config examples/train/sft_tiny_qwen3.yaml "trainer.out_dir=$RUNS/sft_n$n" \
      "data.train_files=[$RUNS/sft.jsonl]" trainer.mixed_precision=none model.dtype=fp32 eval.tasks=null \
      trainer.nproc_per_node=$n "${extra[@]}" ${SFT_ARGS:-} > "$RUNS/sft_n$n.stdout" 2> "$RUNS/sft_n$n.stderr"
    echo "sft nproc=$n exit $?" >> "$OUT/summary.txt"
    mkdir -p "$RUNS/sft_n$n" && cp "$RUNS/sft_n$n.stdout" "$RUNS/sft_n$n.stderr" "$RUNS/sft_n$n/" 2>/dev/null
  done
  mark sft_end
  pack sft sft_n1 sft_n2
}

gym_serve() {  # gym_serve <port> <store> [args...]: a kgym serve in the background; sets GYM_PID
  local port=$1 store=$2; shift 2
  "$K" serve --port "$port" --store "$store" "$@" > "$RUNS/serve_$port.log" 2>&1 &
  GYM_PID=$!
  wait_http "http://127.0.0.1:$port/health" || echo "gym on $port did not start" >> "$OUT/summary.txt"
}
rl() {  # rl <name> [overrides...]
  local name=$1; shift
  local extra=(); [ "$DRY" = 1 ] && extra=("${DEV[@]}" rollout.response_length=48 gym.size=small)
  mark "${name}_start"
  timeout "${RL_TIMEOUT:-900}" "$K" train --config examples/train/rl_fast_vs_lazy.yaml "model.path=$RUNS/sft_n1/final" \
    "trainer.out_dir=$RUNS/$name" "trainer.total_training_steps=${LAYOUT_STEPS:-6}" "${extra[@]}" "$@" ${RL_ARGS:-} \
    > "$RUNS/$name.stdout" 2> "$RUNS/$name.stderr"
  echo "$name exit $?" >> "$OUT/summary.txt"
  mark "${name}_end"
  mkdir -p "$RUNS/$name" && cp "$RUNS/$name.stdout" "$RUNS/$name.stderr" "$RUNS/$name/" 2>/dev/null
}
layout() {
  [ -f "$RUNS/sft_n1/final/config.json" ] || sft
  gym_serve 18241 "$RUNS/layout_gym.db" "${GYM_GPUS[@]}"
  local url=http://127.0.0.1:18241 learners=$((NGPUS - 1))
  rl layout_one "gym.server=$url" rollout.layout=lockstep $(GPUS_OF 0)
  rl layout_split "gym.server=$url" rollout.layout=concurrent $(GPUS_OF "$(ids 1 $learners)") \
    "trainer.nproc_per_node=$([ "$DRY" = 1 ] && echo 2 || echo $learners)"  # the CPU rehearses torchrun too
  kill "$GYM_PID" 2>/dev/null; wait "$GYM_PID" 2>/dev/null
  cp "$RUNS/serve_18241.log" "$RUNS/layout_split/gym_serve.log" 2>/dev/null
  pack layout layout_one layout_split
}

worker() {
  [ -f "$RUNS/sft_n1/final/config.json" ] || sft
  local rs="${REDIS_SERVER:-}"
  [ -z "$rs" ] && [ -x build/gpu-redis/redis-server ] && rs=build/gpu-redis/redis-server
  [ -z "$rs" ] && rs=$(command -v redis-server)
  if [ -z "$rs" ]; then echo "worker: no redis-server (bench/train/pack_redis.sh)" >> "$OUT/summary.txt"; return; fi
  mkdir -p "$RUNS/worker"
  LD_LIBRARY_PATH="$(dirname "$rs")/lib:${LD_LIBRARY_PATH:-}" "$rs" --port 16391 --save '' --appendonly no \
    --bind 127.0.0.1 > "$RUNS/worker/redis.log" 2>&1 &
  local redis=$! url=redis://127.0.0.1:16391/0
  sleep 1
  gym_serve 18242 "$RUNS/worker/api.db" --redis "$url" --gpus none
  local wgpus=(--gpus 1 --slots-per-gpu 8); [ "$DRY" = 1 ] && wgpus=(--gpus none --cpu-slots 2)
  "$K" worker --redis "$url" --worker-id second-gpu "${wgpus[@]}" > "$RUNS/worker/worker.log" 2>&1 &
  local wpid=$!
  rl worker/train gym.server=http://127.0.0.1:18242 $(GPUS_OF 0) trainer.total_training_steps=${WORKER_STEPS:-2}
  curl -s http://127.0.0.1:18242/workers/status > "$RUNS/worker/workers_status.json" 2>/dev/null || \
    "$PY" -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:18242/workers/status').read().decode())" \
    > "$RUNS/worker/workers_status.json"
  kill "$wpid" "$GYM_PID" 2>/dev/null; wait "$wpid" "$GYM_PID" 2>/dev/null
  kill "$redis" 2>/dev/null; wait "$redis" 2>/dev/null
  cp "$RUNS/serve_18242.log" "$RUNS/worker/api_serve.log" 2>/dev/null
  pack worker worker
}

for st in $STAGES; do
  case $st in
    parity) parity ;; sft) sft ;; layout) layout ;; worker) worker ;;
    *) echo "unknown stage $st" >> "$OUT/summary.txt" ;;
  esac
done
"$PY" bench/train/multi_gpu_report.py "$RUNS" --json "$OUT/multi_gpu.json" >> "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
