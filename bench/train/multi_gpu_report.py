#!/usr/bin/env python3
"""The table of bench/train/run_multi_gpu.sh from its RUNS folder (or the unpacked tarballs): per stage

  parity  per precision and GPU count: the SFT and PPO losses and gradient norms of every step, their largest
          relative difference from the 1-GPU run (fp32 must be <= 1e-4), the median seconds per step
  sft     kgym sft's train/loss per step with nproc_per_node 1 and 2, largest relative difference, seconds/step
  layout  per arm: steps, evaluations, generated tokens, wall seconds of the steps -> evaluations per hour and
          tokens per second of the whole loop
  worker  the run's evaluations through Redis and /workers/status of the API node

    python3 bench/train/multi_gpu_report.py RUNS [--json multi_gpu.json]
"""
import argparse
import datetime as dt
import glob
import json
import os
import platform
import statistics
import subprocess
import sys

from summarize import jsonl  # bench/train/summarize.py: a run folder's jsonl, torn last lines skipped

FP32_REL_TOL = 1e-4


def rel(a, b):
    if a is None or b is None:
        return None
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def parity(runs):
    out = {}
    for prec in ("fp32", "bf16"):
        files = sorted(glob.glob(os.path.join(runs, "parity", f"{prec}_gpus*.json")),
                       key=lambda p: int(p.rsplit("gpus", 1)[1].split(".")[0]))
        results = {}
        for f in files:
            r = json.load(open(f))
            results[r["world"]] = r
        if 1 not in results:
            continue
        base, rows = results[1], []
        for n, r in sorted(results.items()):
            worst = 0.0
            for kind in ("sft", "rl"):
                for a, b in zip(base[kind], r[kind]):
                    for key in ("loss", "grad_norm"):
                        d = rel(a[key], b[key])
                        worst = max(worst, d if d is not None else 0.0)
            secs = {k: statistics.median([s["seconds"] for s in r[k][1:]] or [r[k][0]["seconds"]]) for k in ("sft", "rl")}
            rows.append({"gpus": n, "sharding": r["sharding"], "parameters": r["parameters"], "max_rel_diff": worst,
                         "sft_loss": [s["loss"] for s in r["sft"]], "rl_loss": [s["loss"] for s in r["rl"]],
                         "sft_grad_norm": [s["grad_norm"] for s in r["sft"]],
                         "rl_grad_norm": [s["grad_norm"] for s in r["rl"]],
                         "sft_step_s": secs["sft"], "rl_step_s": secs["rl"], "rows_per_rank": r.get("rows_per_rank")})
        out[prec] = {"runs": rows}
        if prec == "fp32":
            out[prec]["tolerance"] = FP32_REL_TOL
            out[prec]["equal"] = all(x["max_rel_diff"] <= FP32_REL_TOL for x in rows)
    return out


def sft(runs):
    curves = {n: [m for m in jsonl(os.path.join(runs, f"sft_n{n}", "metrics.jsonl")) if "train/loss" in m]
              for n in (1, 2)}
    if not curves[1] or not curves[2]:
        return {}
    diffs = [rel(a["train/loss"], b["train/loss"]) for a, b in zip(curves[1], curves[2])]
    return {"steps": min(len(curves[1]), len(curves[2])), "max_rel_diff": max(diffs),
            "loss_n1": [m["train/loss"] for m in curves[1]], "loss_n2": [m["train/loss"] for m in curves[2]],
            "step_s_n1": statistics.median(m["time/step_s"] for m in curves[1]),
            "step_s_n2": statistics.median(m["time/step_s"] for m in curves[2])}


def loop_rates(run_dir):
    ms = [m for m in jsonl(os.path.join(run_dir, "metrics.jsonl")) if "time/step_s" in m]
    if not ms:
        return None
    wall = sum(m["time/step_s"] for m in ms)
    evals = sum(m.get("perf/gym_evals", 0) for m in ms)
    tokens = sum(m.get("perf/generated_tokens", 0) for m in ms)
    return {"steps": len(ms), "wall_s": wall, "evaluations": evals, "generated_tokens": tokens,
            "evaluations_per_hour": 3600 * evals / wall if wall else 0.0, "tokens_per_s": tokens / wall if wall else 0.0,
            "median_step_s": statistics.median(m["time/step_s"] for m in ms)}


def worker(runs):
    d = os.path.join(runs, "worker")
    if not os.path.isdir(d):
        return {}
    out = {"train": loop_rates(os.path.join(d, "train"))}
    try:
        out["workers_status"] = json.load(open(os.path.join(d, "workers_status.json")))
    except (OSError, json.JSONDecodeError):
        out["workers_status"] = None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rep = {"command": " ".join(sys.argv), "date": dt.datetime.now(dt.timezone.utc).isoformat(),
           "machine": platform.node(), "parity": parity(a.runs), "sft": sft(a.runs),
           "layout": {arm: loop_rates(os.path.join(a.runs, f"layout_{arm}")) for arm in ("one", "split")},
           "worker": worker(a.runs)}
    try:
        rep["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        rep["commit"] = None
    for prec, p in rep["parity"].items():
        print(f"parity {prec}" + (f" (equal within {p['tolerance']:g} rel: {p['equal']})" if "equal" in p else ""))
        print(f"  {'gpus':>4} {'sharding':>9} {'max rel diff':>12} {'sft s/step':>10} {'rl s/step':>9}  sft loss / rl loss")
        for r in p["runs"]:
            print(f"  {r['gpus']:>4} {r['sharding']:>9} {r['max_rel_diff']:>12.2e} {r['sft_step_s']:>10.3f} "
                  f"{r['rl_step_s']:>9.3f}  {r['sft_loss'][0]:.6f} / {r['rl_loss'][0]:.6g}")
    if rep["sft"]:
        s = rep["sft"]
        print(f"kgym sft nproc 1 vs 2: {s['steps']} steps, max rel loss diff {s['max_rel_diff']:.2e}, "
              f"s/step {s['step_s_n1']:.3f} vs {s['step_s_n2']:.3f}")
    for arm, r in rep["layout"].items():
        if r:
            print(f"layout {arm:>5}: {r['steps']} steps in {r['wall_s']:.1f} s, {r['evaluations_per_hour']:.0f} "
                  f"evaluations/h, {r['tokens_per_s']:.1f} tokens/s (median step {r['median_step_s']:.1f} s)")
    if rep["worker"]:
        w = rep["worker"]
        print(f"worker: train through Redis {w['train']}, workers {json.dumps(w['workers_status'])[:300]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=2)


if __name__ == "__main__":
    main()
