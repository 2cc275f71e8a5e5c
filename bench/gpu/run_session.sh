#!/usr/bin/env bash
# One GPU run on the lent H200 (device tool), stage by stage: doctor, eval overhead, the full-size suite through
# `kgym suite`, the GPU red-team cases, and the others named in the case below (sanity, diag, compile, wrong5, ncu,
# overhead_ab, throughput). Expects build/gpu/ from bench/gpu/pack.sh (stripped binaries, their
# shared libraries, and pytest wheels in build/gpu/wheels). Raw results go to $OUT; STAGES picks stages.
set -uo pipefail
OUT="${OUT:-/tmp/kgym-gpu-out}"
mkdir -p "$OUT"
B=$PWD/build/gpu
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KGYM_PYTHON="${KGYM_PYTHON:-python3}" KGYM_HARNESS_PATH="$PWD/python" KGYM_BIN="$B/kgym"
# The tree's commit as packed (the copy on the GPU machine may carry a stale .git): eval_overhead records it.
KGYM_BENCH_COMMIT="$(head -1 "$B/commit.txt" 2>/dev/null | cut -c1-7)"; export KGYM_BENCH_COMMIT
STAGES="${STAGES:-doctor overhead suite redteam}"
{
  echo "tree: $(cat build/gpu/commit.txt 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  nproc; free -g | head -2
} > "$OUT/machine.txt" 2>&1
for st in $STAGES; do
  t0=$(date +%s.%N)
  case $st in
    doctor) timeout 120 "$KGYM_BIN" doctor > "$OUT/doctor.txt" 2>&1 ;;
    sanity) timeout 120 "$KGYM_BIN" eval --ref tests/redteam/gpu/ref_matmul.py --kernel tests/redteam/gpu/fused_triton_matmul.py \
              --device cuda --num-perf-trials 30 > "$OUT/sanity.json" 2> "$OUT/sanity.stderr"
            python3 -c "import json,sys; d=json.load(open(sys.argv[1])); m=d['metadata']; print(d['outcome'], d['outcome_detail'][:200], d['reference_runtime'], d['kernel_runtime']); print({k: m.get(k) for k in ('timing_source','timeline_problem','reference_timeline_problem','timeline_span_median_ms','timeline_kernel_sum_median_ms','timing_supervisor_median_ms','timing_harness_overhead_ms','custom_kernel_cuda_time_coverage','roofline','device_copy_bandwidth_gbps')})" "$OUT/sanity.json" > "$OUT/sanity.txt" 2>&1 ;;
    diag) mkdir -p "$OUT/diag"  # full results of chosen candidates against the GPU matmul reference
          for c in ${DIAG:-candidates/F_cache_content.py gpu/lazy_triton.py gpu/side_stream.py}; do
            n=$(basename "$c" .py)
            timeout 150 "$KGYM_BIN" eval --ref tests/redteam/gpu/ref_matmul.py --kernel "tests/redteam/$c" --device cuda \
              ${DIAG_ARGS:-} > "$OUT/diag/$n.json" 2> "$OUT/diag/$n.stderr"
            python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d['outcome'], d['speedup'], d['outcome_detail'][:300])" \
              "$OUT/diag/$n.json" "$n" >> "$OUT/diag.txt" 2>&1
          done
          tar czf "$OUT/diag.tgz" -C "$OUT" diag && rm -rf "$OUT/diag" ;;  # one file (the device tool returns few)
    wrong5) timeout "${SUITE_TIMEOUT:-260}" "$KGYM_BIN" suite --tasks tasks --device cuda --kinds wrong \
              --only softmax_scale_residual,mlp,resnet_block,small_cnn,transformer_block --jobs 2 --num-perf-trials 50 \
              --out "$OUT/suite_wrong5.json" > "$OUT/suite_wrong5.md" 2> "$OUT/suite_wrong5.stderr" ;;
    ncu) timeout "${NCU_TIMEOUT:-540}" python3 bench/gpu/ncu_compare.py --bin "$KGYM_BIN" --out "$OUT/ncu" ${NCU_ARGS:-} \
           > "$OUT/ncu_compare.log" 2>&1 ;;
    compile)  # each task's reference timed eager and under torch.compile (KernelGYM's reference_backend), same candidate
      for t in ${COMPILE_TASKS:-level2/linear_bias_gelu level2/softmax_scale_residual}; do
        for rb in pytorch torch_compile; do
          n=$(basename "$t")_$rb
          timeout 280 "$KGYM_BIN" eval --ref "tasks/$t.py" --kernel "tasks/solutions/${t}_triton.py" \
            --device cuda --num-perf-trials 50 --reference-backend "$rb" > "$OUT/compile_$n.json" 2> "$OUT/compile_$n.stderr"
          python3 -c "import json,sys; d=json.load(open(sys.argv[1])); m=d['metadata']; print(sys.argv[2], d['outcome'], 'ref', d['reference_runtime'], 'cand', d['kernel_runtime'], 'speedup', d['speedup'], m.get('reference_backend_error'), m.get('reference_kernels'), [k[:60] for k in m.get('reference_kernel_names', [])], m.get('phase_s'))" \
            "$OUT/compile_$n.json" "$n" >> "$OUT/compile.txt" 2>&1
        done
      done
      tar czf "$OUT/compile.tgz" -C "$OUT" $(cd "$OUT" && ls compile_*) && rm -f "$OUT"/compile_* ;;
    overhead_ab)  # the recorder's cost per evaluation: on, then off (KGYM_CUPTI_LIB=off)
      timeout 150 "$B/eval_overhead" --device cuda -n 20 --baseline-n 1 --out "$OUT/eval_overhead-h200.json" > "$OUT/eval_overhead.md" 2>&1
      KGYM_CUPTI_LIB=off timeout 150 "$B/eval_overhead" --device cuda -n 20 --baseline-n 1 \
        --out "$OUT/eval_overhead-h200-norecorder.json" > "$OUT/eval_overhead-norecorder.md" 2>&1
      tail -12 "$OUT/eval_overhead-norecorder.md" ;;
    overhead) timeout 150 "$B/eval_overhead" --device cuda -n 20 --baseline-n 3 \
                --out "$OUT/eval_overhead-h200.json" > "$OUT/eval_overhead.md" 2>&1 ;;
    suite) timeout "${SUITE_TIMEOUT:-260}" "$KGYM_BIN" suite --tasks tasks --device cuda --kinds "${SUITE_KINDS:-triton,wrong}" \
             --jobs "${SUITE_JOBS:-3}" --num-perf-trials 50 --out "$OUT/suite.json" > "$OUT/suite.md" 2> "$OUT/suite.stderr" ;;
    redteam)
      python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q --no-index --target /tmp/kgym-pytest "$B"/wheels/*.whl
      PYTHONPATH="/tmp/kgym-pytest:$PWD/python" KGYM_GPU_TESTS=1 timeout "${REDTEAM_TIMEOUT:-420}" \
        python3 -m pytest -q -rA -p no:cacheprovider tests/redteam/test_redteam_gpu.py > "$OUT/redteam_gpu.txt" 2>&1 ;;
    throughput) timeout "${THROUGHPUT_TIMEOUT:-500}" python3 bench/throughput/run_throughput.py --bin "$KGYM_BIN" \
                  --gpus all ${THROUGHPUT_ARGS:-} --out "$OUT/throughput-h200.json" > "$OUT/throughput.md" 2>&1 ;;
  esac
  echo "$st rc=$? $(python3 -c "import time,sys; print('%.1f s' % (time.time() - float(sys.argv[1])))" "$t0")" >> "$OUT/stages.txt"
done
cat "$OUT/stages.txt"; cat "$OUT/sanity.txt" "$OUT/diag.txt" "$OUT/compile.txt" 2>/dev/null; tail -12 "$OUT/eval_overhead.md" 2>/dev/null
tail -12 "$OUT/suite_wrong5.md" 2>/dev/null; tail -40 "$OUT/ncu/ncu_compare.md" 2>/dev/null; tail -30 "$OUT/suite.md" 2>/dev/null
tail -15 "$OUT/redteam_gpu.txt" 2>/dev/null; tail -12 "$OUT/throughput.md" 2>/dev/null
exit 0  # each stage's status is in stages.txt; the tails above fail for the stages that did not run
