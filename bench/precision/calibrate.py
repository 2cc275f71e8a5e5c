"""Calibrates the strict precision budget (src/eval/precision.h) on the CPU: for every task of tasks/level1 and
tasks/level2, the fp32 reference's own error against its fp64 oracle (the model and inputs cast to float64, as the
reference's worker computes it), and the errors of
  honest fp32 rewrites: the task's hand-written `_torch.py` solution (einsum, unfold + matmul, var_mean, ...), its
    `_triton.py` solution in Triton's interpreter (with --triton), and the reference itself under a tiled-GEMM /
    blocked-conv / blocked-sum reordering (bench/precision/numerics.py);
  downgrades: matmul operands truncated to TF32, rounded to bf16 or fp16, results stored in bf16 or fp16.
Prints one table (relative L2 errors, and each one's ratio to the reference's own) and writes the raw numbers.

  /usr/bin/python3 bench/precision/calibrate.py --size small --seeds 3 --out bench/results/precision-calibration-vm.json
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numerics import run_with  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HONEST = ("reorder", "torch_solution", "triton_solution")
DOWNGRADES = ("tf32", "fp16", "bf16", "fp16_out", "bf16_out")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def rel_l2(out, oracle):
    num = den = 0.0
    for o, g in zip(as_list(out), as_list(oracle)):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            continue
        d = o.double() - g.double()
        num += float((d * d).sum())
        den += float((g.double() ** 2).sum())
    return (num / den) ** 0.5 if den > 0 else num ** 0.5


def build(mod, cls, seed, init):
    torch.manual_seed(seed)
    return getattr(mod, cls)(*init).eval()


def task_rows(level, name, size, seeds, triton):
    os.environ["KGYM_TASK_SIZE"] = size
    ref_mod = load(os.path.join(ROOT, "tasks", level, name + ".py"), "ref_" + name)
    sols = {}
    for kind in ("torch", "triton"):
        p = os.path.join(ROOT, "tasks", "solutions", level, "%s_%s.py" % (name, kind))
        if os.path.exists(p) and (kind == "torch" or triton):
            try:
                sols[kind] = load(p, "%s_%s" % (name, kind))
            except Exception as e:  # noqa: BLE001
                print("  %s %s: %s" % (name, kind, e), file=sys.stderr)
    rows = []
    for seed in range(seeds):
        torch.manual_seed(1000 + seed)
        init = list(ref_mod.get_init_inputs())
        torch.manual_seed(2000 + seed)
        x = list(ref_mod.get_inputs())
        model = build(ref_mod, "Model", seed, init)
        y32 = run_with(model, x, None)
        m64 = build(ref_mod, "Model", seed, init).double()
        x64 = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in x]
        oracle = run_with(m64, x64, None)
        row = {"task": "%s/%s" % (level, name), "size": size, "seed": seed, "reference": rel_l2(y32, oracle)}
        for mode in ("reorder",) + DOWNGRADES:
            row[mode] = rel_l2(run_with(model, x, mode), oracle)
        for kind, mod in sols.items():
            try:
                cand = build(mod, "ModelNew", seed, init)
                row[kind + "_solution"] = rel_l2(run_with(cand, x, None), oracle)
            except Exception as e:  # noqa: BLE001
                row[kind + "_solution_error"] = str(e)[:200]
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--triton", action="store_true", help="also the _triton solutions (TRITON_INTERPRET=1)")
    ap.add_argument("--levels", default="level1,level2")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.set_num_threads(2)
    rows = []
    for level in a.levels.split(","):
        for f in sorted(os.listdir(os.path.join(ROOT, "tasks", level))):
            if f.endswith(".py"):
                rows += task_rows(level, f[:-3], a.size, a.seeds, a.triton)
    cols = ("reference",) + HONEST + DOWNGRADES
    print("%-34s" % "task (median over seeds)" + "".join("%11s" % c[:10] for c in cols))
    summary = {}
    for task in sorted({r["task"] for r in rows}):
        rs = [r for r in rows if r["task"] == task]
        line = "%-34s" % task
        summary[task] = {}
        for c in cols:
            vals = sorted(r[c] for r in rs if c in r)
            if not vals:
                line += "%11s" % "-"
                continue
            med = vals[len(vals) // 2]
            summary[task][c] = med
            line += "%11.2e" % med
        print(line)
    print("\nratio to the reference's own error (the largest over seeds):")
    worst = {}
    for c in HONEST + DOWNGRADES:
        ratios = [(r[c] / r["reference"] if r["reference"] > 0 else float("inf") if r[c] > 0 else 1.0, r["task"])
                  for r in rows if c in r]
        if ratios:
            lo, hi = min(ratios), max(ratios)
            worst[c] = {"min": lo[0], "min_task": lo[1], "max": hi[0], "max_task": hi[1]}
            print("  %-16s min %9.3g (%s)  max %9.3g (%s)" % (c, lo[0], lo[1], hi[0], hi[1]))
    for c in HONEST + DOWNGRADES:
        errs = [r[c] for r in rows if c in r]
        if errs:
            print("  %-16s rel L2 from %.3g to %.3g" % (c, min(errs), max(errs)))
    if a.out:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = ""
        with open(a.out, "w") as f:
            json.dump({"command": " ".join(sys.argv), "commit": commit, "machine": platform.node(),
                       "date": datetime.date.today().isoformat(), "torch": torch.__version__, "rows": rows,
                       "summary": summary, "ratios": worst}, f, indent=1)


if __name__ == "__main__":
    main()
