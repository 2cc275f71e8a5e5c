"""One evaluation by KernelBench's own harness in this fresh process, as its batch protocol does
(scripts/eval_from_generations.py starts a spawned process per evaluation): `eval_kernel_against_ref` from the
checkout's src/kernelbench/eval.py, imported from the checkout as it is.

Reads one JSON job on stdin ({"kernelbench": checkout, "ref", "kernel", "build_dir", "num_correct_trials",
"num_perf_trials", "backend", "device"}) and prints one line `KB_RESULT <json>`: the harness's KernelExecResult
(runtimes in ms, as its timing module returns them) and this process's phase times. An exception that escapes the
harness is recorded as the batch protocol records it (compiled=False, correctness=False, the error in metadata).

KernelBench's package imports LLM clients (openai, litellm) at import time for its generation scripts; where they
are not installed, the stand-ins in kb_shims/ (appended to sys.path, so installed packages win) satisfy those
imports. Nothing in the evaluation path calls them; a fresh process here therefore imports less than a full
KernelBench install would, which can only make this harness look faster.
"""
import json
import os
import sys
import time

T_START = time.time()


def main():
    job = json.load(sys.stdin)
    sys.path.insert(0, os.path.join(job["kernelbench"], "src"))
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kb_shims"))
    import torch
    from kernelbench import eval as kb_eval
    t_imported = time.time()
    out = {"phase_s": {"startup": t_imported - T_START}}
    try:
        res = kb_eval.eval_kernel_against_ref(
            original_model_src=job["ref"], custom_model_src=job["kernel"], seed_num=42,
            num_correct_trials=job["num_correct_trials"], num_perf_trials=job["num_perf_trials"],
            measure_performance=True, timing_method="cuda_event", verbose=False, build_dir=job["build_dir"],
            device=torch.device(job["device"]), backend=job["backend"], precision=torch.float32)
        out["result"] = None if res is None else res.model_dump()
    except Exception as e:  # noqa: BLE001 - the batch protocol's last-level catch, recorded the same way
        key = "cuda_error" if "CUDA error" in str(e) else "other_error"
        out["result"] = {"compiled": False, "correctness": False, "runtime": -1.0, "ref_runtime": -1.0,
                         "metadata": {key: str(e), key + "_name": type(e).__name__}}
    out["phase_s"]["evaluate"] = time.time() - t_imported
    sys.stdout.write("\nKB_RESULT " + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
