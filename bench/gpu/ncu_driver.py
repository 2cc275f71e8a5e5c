#!/usr/bin/env python3
"""Runs suite tasks' references and solutions in NVTX ranges, for Nsight Compute (driven by ncu_compare.py).

Per task: Model and ModelNew built from one seed (as kgym's harness does: seeded, under no_grad, then moved to the
device, eval mode), one seeded input set made on the device, WARMUP untimed calls of each, then CALLS calls of each,
every call alone in a push/pop range named kgym_<ref|sol>.<level>.<task>.c<k>. Before each call the L2 is flushed
by zeroing 256 MiB and the device synchronised, outside the range, like kgym's timed calls (TF32 off there too).
Range names avoid ncu's NVTX filter quantifiers (/ [ ] + * @) and the ':' that separates fields of its NVTX
column. One JSON line per task on stdout; a task that fails is reported and the next one runs.
"""
import argparse
import importlib.util
import json
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 1000
FLUSH_BYTES = 256 << 20  # kgym's flush_mb default on CUDA


def range_name(side, task, call):
    return f"kgym_{side}.{task.replace('/', '.')}.c{call}"


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class NoNvtx:
    def range_push(self, _):
        pass

    def range_pop(self):
        pass


def run_task(torch, task, args, nvtx, flush):
    level, name = task.split("/")
    ref_mod = load_module(os.path.join(ROOT, "tasks", level, name + ".py"), f"kgym_ref_{level}_{name}")
    sol_mod = load_module(os.path.join(ROOT, "tasks", "solutions", level, f"{name}_{args.kind}.py"),
                          f"kgym_sol_{level}_{name}")
    cuda = args.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    init = list(ref_mod.get_init_inputs())
    models = {}
    for side, cls in (("ref", ref_mod.Model), ("sol", sol_mod.ModelNew)):
        torch.manual_seed(SEED)  # same seed before each constructor: same weights
        with torch.no_grad():
            models[side] = cls(*init).to(args.device).eval()
    torch.manual_seed(SEED + 7)
    if cuda and hasattr(torch.device(args.device), "__enter__"):  # torch >= 2.0: draw the inputs on the device
        with torch.device(args.device):
            inputs = list(ref_mod.get_inputs())
    else:
        inputs = list(ref_mod.get_inputs())
    inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in inputs]
    wall = {}
    with torch.no_grad():
        for side in ("ref", "sol"):
            m = models[side]
            for _ in range(args.warmup):
                m(*inputs)
            sync()
            spent = 0.0
            for k in range(args.calls):
                if flush is not None:
                    flush.zero_()
                sync()
                t = time.perf_counter()
                nvtx.range_push(range_name(side, task, k))
                m(*inputs)
                nvtx.range_pop()
                sync()
                spent += time.perf_counter() - t
            # Host wall per call: under ncu it includes the profiler's per-kernel cost; a sanity figure only.
            wall[side] = round(spent / max(1, args.calls) * 1e3, 3)
    return {"task": task, "ok": True, "calls": args.calls, "host_wall_ms_per_call": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", required=True, help="comma-separated, e.g. level1/matmul,level3/mlp")
    ap.add_argument("--kind", default="triton", help="solution kind: tasks/solutions/levelN/<task>_<kind>.py")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full", help="KGYM_TASK_SIZE (full or small)")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=0, help="unix time; tasks not started by then are skipped")
    args = ap.parse_args()
    os.environ["KGYM_TASK_SIZE"] = args.size  # read by the task modules at import
    if os.environ.get("KGYM_TRITON_PATH"):  # the CPU box keeps its Triton interpreter out of site-packages
        sys.path.append(os.environ["KGYM_TRITON_PATH"])
    import torch
    cuda = args.device.startswith("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # kgym pins both off (harness _pin_flags)
    torch.backends.cudnn.allow_tf32 = False
    versions = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if cuda else "cpu"}
    try:
        import triton
        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = None
    print(json.dumps({"versions": versions}), flush=True)
    nvtx = torch.cuda.nvtx if cuda else NoNvtx()
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device=args.device) if cuda else None
    failed = 0
    for task in [t for t in args.tasks.split(",") if t]:
        if args.deadline and time.time() > args.deadline:
            print(json.dumps({"task": task, "ok": False, "skipped": "deadline"}), flush=True)
            continue
        t0 = time.time()
        try:
            rec = run_task(torch, task, args, nvtx, flush)
        except Exception as e:  # noqa: BLE001 - reported, the next task still runs
            failed += 1
            rec = {"task": task, "ok": False, "error": f"{type(e).__name__}: {e}"[:400],
                   "traceback_tail": traceback.format_exc().strip().splitlines()[-4:]}
        rec["seconds"] = round(time.time() - t0, 2)
        print(json.dumps(rec), flush=True)
        if cuda:
            torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
