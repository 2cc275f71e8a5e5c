#!/usr/bin/env bash
# The demo that fits one GPU (issue 41), in as many calls of the device tool as it takes: a random-init Qwen3 of the
# 0.6 B shape through kgym sft on our data (examples/train/sft_0p6b_qwen3.yaml), its greedy answers graded by the
# gym, then kgym train (examples/train/rl_0p6b_demo.yaml) and the same run with shuffled rewards (the control) at
# once, both evaluated by one kgym serve on the same GPU. nvidia-smi samples the GPU every 200 ms.
#
#   OUT=DIR BUDGET_S=510 bash bench/train/demo.sh     (expects build/gpu/ from bench/gpu/pack.sh)
#
# Stages, in order (STAGES to run fewer): data, sft, grade, rl. Each is skipped when its output is complete, and one
# cut short continues from its newest checkpoint. BUDGET_S is this call's wall budget: each stage is given what is
# left less RESERVE_S as trainer.time_budget_s (it stops after a step with a checkpoint saved), and a stage after
# the call's first starts only while MIN_STAGE_S are left. Every call ends by writing $OUT/demo.json
# (bench/train/demo_summary.py) and printing "demo: complete" or "demo: more calls needed". The run folders live
# in RUNS (default runs/demo in the working tree, kept by the warm machine between calls; not under OUT).
# Rehearsal on the CPU with the same stages (the pure-torch tiny model, the CPU gym, the torch solutions):
#   KGYM=build/src/cli/kgym KGYM_PYTHON=/usr/bin/python3 REHEARSE=1 OUT=/tmp/demo-rehearse bash bench/train/demo.sh
# Knobs for tests: DEMO_TASKS, DEMO_SOLUTIONS, DEMO_KINDS, DEMO_REPEAT, DEMO_SFT_ONLY, DEMO_FAST_KIND, GYM_SERVER (a gym
# URL instead of kgym serve / the in-process gym), SFT_ARGS and RL_ARGS (extra key=value overrides, space-separated).
set -uo pipefail
CALL_START=$(date +%s)
OUT="${OUT:-/tmp/kgym-demo}"
B=$PWD/build/gpu
K="${KGYM:-$B/kgym}"
. "$(dirname "$0")/gym_serve.sh"  # start_gym
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KGYM_PYTHON="${KGYM_PYTHON:-python3}" KGYM_HARNESS_PATH="$PWD/python" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
STAGES="${STAGES:-data sft grade rl}"
BUDGET_S="${BUDGET_S:-510}" RESERVE_S="${RESERVE_S:-}" MIN_STAGE_S="${MIN_STAGE_S:-}"
TASKS="${DEMO_TASKS:-tasks}" SOLUTIONS="${DEMO_SOLUTIONS:-tasks/solutions}" KINDS="${DEMO_KINDS:-triton,lazy}"
REPEAT="${DEMO_REPEAT:-1}" SFT_ONLY="${DEMO_SFT_ONLY:-}" FAST_KIND="${DEMO_FAST_KIND:-triton}"
SFT_X=() RL_X=() GRADE_X=(eval.tasks="$TASKS")
if [ "${REHEARSE:-0}" = 1 ]; then
  RUNS="${RUNS:-$PWD/runs/demo-rehearse}"
  KINDS="${DEMO_KINDS:-torch}" FAST_KIND="${DEMO_FAST_KIND:-torch}" RESERVE_S="${RESERVE_S:-5}"
  MIN_STAGE_S="${MIN_STAGE_S:-20}"
  ONLY="level1/relu level1/softmax level1/rmsnorm"
  SFT_ONLY="${DEMO_SFT_ONLY-$ONLY}"
  TINY=(model.init.arch=tiny model.init.hidden_size=64 model.init.intermediate_size=128 model.init.num_hidden_layers=2
        model.init.num_attention_heads=4 model.init.max_position_embeddings=4096 model.init.vocab_size=0
        model.dtype=fp32 trainer.device=cpu trainer.mixed_precision=none tokenizer.vocab_size=2048
        learner.startup_timeout=300)
  SFT_X=("${TINY[@]}" trainer.total_training_steps=30 data.train_batch_size=3 optim.lr=3e-3 model.gradient_checkpointing=false
         trainer.save_freq=10 eval.max_tokens=900)
  GRADE_X+=(eval.size=small eval.num_perf_trials=3 gym.device=cpu "eval.only=[${SFT_ONLY// /,}]")
  RL_X=("${TINY[@]}" gym.device=cpu gym.size=small "data.only=[${SFT_ONLY// /,}]" data.train_batch_size=3 rollout.n=4
        rollout.response_length=900 gym.num_perf_trials=3 trainer.total_training_steps=3 rollout.kv_cache_gb=0.25)
fi
RUNS="${RUNS:-$PWD/runs/demo}" RESERVE_S="${RESERVE_S:-60}" MIN_STAGE_S="${MIN_STAGE_S:-120}"
mkdir -p "$OUT" "$RUNS"
[ -n "${GYM_SERVER:-}" ] && GRADE_X+=(gym.server="$GYM_SERVER")
read -r -a SFT_EXTRA <<< "${SFT_ARGS:-}"
read -r -a RL_EXTRA <<< "${RL_ARGS:-}"
: > "$OUT/call.txt"
log() { echo "$*" | tee -a "$OUT/call.txt" >&2; }
left() { echo $((BUDGET_S - ($(date +%s) - CALL_START))); }
STARTED=0  # a stage has run in this call: later ones need MIN_STAGE_S
may_start() {  # may_start <stage>: the call's first stage always runs (progress), later ones while time is left
  if [ "$STARTED" = 1 ] && [ "$(left)" -lt "$MIN_STAGE_S" ]; then
    log "demo: $1 not started: $(left) s left of BUDGET_S=$BUDGET_S"
    return 1
  fi
  STARTED=1
}
stage_budget() { local b=$(($(left) - RESERVE_S)); echo $((b < 1 ? 1 : b)); }
hard_limit() { local r=$((RESERVE_S - 5)); echo $(($1 + (r > 60 ? r : 60))); }  # kill a stage past its budget
{
  echo "tree: $(head -1 "$B/commit.txt" 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname) $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "gpu: none"
  "$KGYM_PYTHON" -c "import torch; print('torch', torch.__version__)" 2>&1
} > "$RUNS/machine.txt"
echo "$(date -u +%FT%TZ) start BUDGET_S=$BUDGET_S STAGES=$STAGES REHEARSE=${REHEARSE:-0}" >> "$RUNS/calls.txt"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 200 \
    >> "$RUNS/gpu_util.csv" 2>/dev/null &
  SMI=$!
  trap 'kill $SMI 2>/dev/null' EXIT
fi

data() {
  [ -s "$RUNS/sft.jsonl" ] && return 0
  "$K" data sft --tasks "$TASKS" --solutions "$SOLUTIONS" --kinds "$KINDS" --repeat "$REPEAT" \
    ${SFT_ONLY:+--only $SFT_ONLY} --out "$RUNS/sft.jsonl.tmp" 2>> "$RUNS/data.log" && mv "$RUNS/sft.jsonl.tmp" "$RUNS/sft.jsonl"
}
sft_args() {
  echo --config examples/train/sft_0p6b_qwen3.yaml "trainer.out_dir=$RUNS/sft" "data.train_files=[$RUNS/sft.jsonl]"
}
sft() {
  [ -f "$RUNS/sft.done" ] && return 0
  may_start sft || return 1
  local b; b=$(stage_budget)
  log "demo: sft with trainer.time_budget_s=$b"
  timeout -k 10 "$(hard_limit "$b")" "$K" sft $(sft_args) "${SFT_X[@]}" "${SFT_EXTRA[@]}" \
    "trainer.time_budget_s=$b" >> "$RUNS/sft_stdout.txt" 2>> "$RUNS/sft_stderr.txt"
  local rc=$?
  log "demo: sft exit $rc"
  [ $rc = 0 ] && [ -d "$RUNS/sft/final" ] && touch "$RUNS/sft.done"
  [ -f "$RUNS/sft.done" ]
}
grade() {
  [ -f "$RUNS/sft/eval/grade.json" ] && return 0
  may_start grade || return 1
  timeout -k 10 $(($(left) > 30 ? $(left) - 10 : 20)) "$K" sft --grade-only $(sft_args) "${SFT_X[@]}" \
    "${SFT_EXTRA[@]}" "${GRADE_X[@]}" >> "$RUNS/grade_stdout.txt" 2>> "$RUNS/grade_stderr.txt"
  log "demo: grade exit $?"
  [ -f "$RUNS/sft/eval/grade.json" ]
}
arm() {  # arm <name> <budget> [overrides...]
  local name=$1 b=$2; shift 2
  timeout -k 10 "$(hard_limit "$b")" "$K" train --config examples/train/rl_0p6b_demo.yaml \
    "model.path=$RUNS/sft/final" "trainer.out_dir=$RUNS/$name" "metrics.known_solutions=$SOLUTIONS" \
    "data.train_files=[$TASKS]" "${RL_X[@]}" "$@" "${RL_EXTRA[@]}" "trainer.time_budget_s=$b" \
    >> "$RUNS/$name.stdout" 2>> "$RUNS/$name.stderr"
  log "demo: $name exit $?"
}
arm_done() {
  local total
  total=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['trainer']['total_training_steps'])" \
    "$RUNS/$1/config.json" 2>/dev/null) || return 1
  [ -f "$RUNS/$1/checkpoints/step_$total/kgym_state.json" ]
}
rl() {
  arm_done rl && arm_done control && return 0
  may_start rl || return 1
  local b serve="" gym=()
  if [ -n "${GYM_SERVER:-}" ]; then
    gym=(gym.server="$GYM_SERVER")
  elif [ "${REHEARSE:-0}" != 1 ]; then  # one kgym serve on the GPU for both arms: one timing lock
    start_gym "$RUNS/serve.log"
    serve=$GYM_PID
    gym=(gym.server="$GYM_URL")
  fi
  b=$(stage_budget)
  log "demo: rl and control with trainer.time_budget_s=$b"
  arm_done rl || arm rl "$b" "${gym[@]}" &
  local p1=$!
  arm_done control || arm control "$b" "${gym[@]}" algorithm.reward_shuffle=true &
  local p2=$!
  wait $p1 $p2
  [ -n "$serve" ] && { kill "$serve" 2>/dev/null; wait "$serve" 2>/dev/null; }
  arm_done rl && arm_done control
}

complete=1
for st in $STAGES; do
  case $st in
    data) data || { log "demo: data failed"; complete=0; break; } ;;
    sft) sft || { complete=0; break; } ;;
    grade) grade || { complete=0; break; } ;;
    rl) rl || { complete=0; break; } ;;
    *) log "demo: unknown stage $st"; complete=0; break ;;
  esac
done
echo "$(date -u +%FT%TZ) end complete=$complete" >> "$RUNS/calls.txt"
[ -n "${SMI:-}" ] && kill "$SMI" 2>/dev/null
CMD="BUDGET_S=$BUDGET_S${REHEARSE:+ REHEARSE=$REHEARSE} bash bench/train/demo.sh"
python3 bench/train/demo_summary.py "$RUNS" --json "$OUT/demo.json" --fast-kind "$FAST_KIND" \
  --solutions "$SOLUTIONS" --command "$CMD" >> "$OUT/call.txt" 2>&1
tar czf "$OUT/runs.tgz" -C "$RUNS" --exclude='checkpoints' --exclude='final' --exclude='weights' \
  --exclude='tensorboard' --exclude='tokenizer' --exclude='gym.db*' . 2>/dev/null
cp "$RUNS/calls.txt" "$RUNS/machine.txt" "$OUT/" 2>/dev/null
if [ "$complete" = 1 ] && [ "$STAGES" = "data sft grade rl" ]; then log "demo: complete"; else log "demo: more calls needed"; fi
cat "$OUT/call.txt"
