"""Checks the solutions under tasks/solutions/ against their reference tasks.

For every task tasks/levelN/<name>.py and every solution tasks/solutions/levelN/<name>_<kind>.py
(kind: triton, torch, wrong) it builds Model and ModelNew from the same seed, feeds both the same
seeded inputs and compares the outputs (shape, finiteness, allclose with atol = rtol = 1e-2).
It prints one JSON object per solution on stdout and a summary on stderr; the exit status is 0
when every triton/torch solution is correct and every wrong one is not.

This is a quick, in-process checker for authoring the suite (and for running Triton solutions
under TRITON_INTERPRET=1 on a CPU); it is not the sandboxed evaluator.

    KGYM_TASK_SIZE=small python3 tasks/check_solutions.py --device cpu --kinds torch
    TRITON_INTERPRET=1 python3 tasks/check_solutions.py --size small --device cpu
    python3 tasks/check_solutions.py --size full --device cuda level1/relu
"""
import argparse
import importlib.util
import json
import os
import sys
import traceback

TASKS_DIR = os.path.dirname(os.path.abspath(__file__))
KINDS = ("triton", "torch", "lazy", "wrong")
ATOL = RTOL = 1e-2


def task_paths():
    """Returns {"levelN/name": path} for every reference task, sorted."""
    out = {}
    for level in sorted(os.listdir(TASKS_DIR)):
        level_dir = os.path.join(TASKS_DIR, level)
        if not (level.startswith("level") and os.path.isdir(level_dir)):
            continue
        for fname in sorted(os.listdir(level_dir)):
            if fname.endswith(".py") and not fname.startswith("_"):
                out[f"{level}/{fname[:-3]}"] = os.path.join(level_dir, fname)
    return out


def solution_path(task_id, kind):
    level, name = task_id.split("/")
    return os.path.join(TASKS_DIR, "solutions", level, f"{name}_{kind}.py")


_counter = [0]


def load_module(path):
    _counter[0] += 1
    spec = importlib.util.spec_from_file_location(f"kgym_task_mod_{_counter[0]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(ref, out):
    """Returns (ok, detail, max_abs_diff) for one pair of outputs (tensor or tuple/list)."""
    import torch
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(refs) != len(outs):
        return False, f"expected {len(refs)} outputs, got {len(outs)}", None
    worst = 0.0
    for r, o in zip(refs, outs):
        if not isinstance(o, torch.Tensor):
            return False, f"output is {type(o).__name__}, not a tensor", None
        if tuple(r.shape) != tuple(o.shape):
            return False, f"shape mismatch: expected {list(r.shape)}, got {list(o.shape)}", None
        if r.dtype != o.dtype:
            return False, f"dtype mismatch: expected {r.dtype}, got {o.dtype}", None
        o = o.to(r.device)
        if not torch.isfinite(o).all() and torch.isfinite(r).all():
            return False, "output has non-finite values", None
        diff = (r.double() - o.double()).abs()
        worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        if not torch.allclose(r, o, atol=ATOL, rtol=RTOL):
            return False, f"values differ: max abs diff {worst:.4g}", worst
    return True, f"max abs diff {worst:.4g}", worst


def check(task_id, kind, device, trials):
    import torch
    task = load_module(task_paths()[task_id])
    sol = load_module(solution_path(task_id, kind))
    worst = 0.0
    for trial in range(trials):
        seed = 1000 + trial
        torch.manual_seed(seed)
        model = task.Model(*task.get_init_inputs()).to(device).eval()
        torch.manual_seed(seed)
        new = sol.ModelNew(*task.get_init_inputs()).to(device).eval()
        torch.manual_seed(seed + 7)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        with torch.no_grad():
            ref = model(*inputs)
            out = new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        ok, detail, diff = compare(ref, out)
        if diff is not None:
            worst = max(worst, diff)
        if not ok:
            return {"verdict": "incorrect", "detail": f"trial {trial}: {detail}"}
    return {"verdict": "correct", "detail": f"max abs diff {worst:.4g} over {trials} trials"}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tasks", nargs="*", help="task ids like level1/relu (default: all)")
    parser.add_argument("--size", choices=("full", "medium", "small"), default=os.environ.get("KGYM_TASK_SIZE", "small"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of triton,torch,lazy,wrong")
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args(argv)
    os.environ["KGYM_TASK_SIZE"] = args.size  # read by the task modules at import

    all_tasks = task_paths()
    selected = args.tasks or list(all_tasks)
    kinds = [k for k in args.kinds.split(",") if k]
    failures = 0
    for task_id in selected:
        if task_id not in all_tasks:
            print(f"unknown task {task_id}", file=sys.stderr)
            return 2
        for kind in kinds:
            if not os.path.exists(solution_path(task_id, kind)):
                continue
            try:
                result = check(task_id, kind, args.device, args.trials)
            except Exception as exc:  # a solution that raises is simply not correct
                tb = traceback.format_exc().strip().splitlines()
                result = {"verdict": "error", "detail": f"{type(exc).__name__}: {exc}"[:500],
                          "traceback_tail": tb[-6:]}
            expected_correct = kind != "wrong"
            as_expected = (result["verdict"] == "correct") == expected_correct
            failures += not as_expected
            result.update({"task": task_id, "kind": kind, "as_expected": as_expected})
            print(json.dumps(result), flush=True)
            mark = "ok " if as_expected else "BAD"
            print(f"{mark} {task_id:36s} {kind:7s} {result['verdict']:9s} {result['detail'][:90]}",
                  file=sys.stderr, flush=True)
    print(f"{failures} unexpected verdicts", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
