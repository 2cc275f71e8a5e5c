"""Times every reference task (and optionally a solution kind) on a CUDA device, eager fp32.

For sizing the suite, not for grading: CUDA events around single calls, the L2 cache flushed
before each call, TF32 off, median of --trials calls after --warmup calls. Prints one JSON object
per task on stdout and a table on stderr.

    python3 tasks/time_references.py --size full --solution triton
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_solutions  # noqa: E402  (task discovery and module loading)


def time_calls(torch, fn, warmup, trials):
    flush = torch.empty(256 * 1024 * 1024 // 4, device="cuda", dtype=torch.float32)
    with torch.no_grad():
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(trials):
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--size", choices=("full", "medium", "small"), default="full")
    parser.add_argument("--solution", default="", help="also time tasks/solutions/.../<name>_<kind>.py")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args(argv)
    os.environ["KGYM_TASK_SIZE"] = args.size
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tasks = check_solutions.task_paths()
    for task_id in args.tasks or list(tasks):
        task = check_solutions.load_module(tasks[task_id])
        torch.manual_seed(0)
        model = task.Model(*task.get_init_inputs()).cuda().eval()
        torch.manual_seed(1)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        torch.cuda.reset_peak_memory_stats()
        ref_ms = time_calls(torch, lambda: model(*inputs), args.warmup, args.trials)
        row = {"task": task_id, "size": args.size, "reference_ms": round(ref_ms, 4),
               "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
        path = check_solutions.solution_path(task_id, args.solution) if args.solution else ""
        if path and os.path.exists(path):
            sol = check_solutions.load_module(path)
            torch.manual_seed(0)
            new = sol.ModelNew(*task.get_init_inputs()).cuda().eval()
            row[f"{args.solution}_ms"] = round(time_calls(torch, lambda: new(*inputs), args.warmup, args.trials), 4)
            del new
        print(json.dumps(row), flush=True)
        extra = f"  {args.solution} {row.get(args.solution + '_ms', float('nan')):9.3f} ms" if path else ""
        print(f"{task_id:36s} ref {ref_ms:9.3f} ms  peak {row['peak_gib']:6.2f} GiB{extra}", file=sys.stderr, flush=True)
        del model, inputs
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
