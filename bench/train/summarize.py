#!/usr/bin/env python3
"""Summarises a folder of training runs (bench/train/run_h200.sh's RUNS, or the unpacked tarballs): the SFT loss
and its gym grading, and per RL run the share of rollouts choosing each known solution, the reward, the time per
phase, tokens/s, gym evaluations/s and the GPU busy fraction (NVML utilization sampled every 250 ms over the
stage's window). Prints a table and, with --json FILE, writes the numbers.

    python3 bench/train/summarize.py RUNS [--json summary.json]
"""
import argparse
import csv
import datetime as dt
import json
import os
import statistics


def jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a torn last line of a run cut short
    return out


def windows(runs):
    w, path = {}, os.path.join(runs, "stages.txt")
    if os.path.exists(path):
        for line in open(path):
            name, when = line.split()
            w[name] = dt.datetime.fromisoformat(when)
    return w


def busy(runs, start, end):
    """Mean NVML GPU utilization (%) of the samples in [start, end]."""
    path = os.path.join(runs, "gpu_util.csv")
    if not (start and end and os.path.exists(path)):
        return None
    vals = []
    for row in csv.reader(open(path)):
        try:
            t = dt.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
            if start <= t <= end:
                vals.append(float(row[1]))
        except (ValueError, IndexError):
            continue
    return statistics.mean(vals) if vals else None


def mean(rows, key, skip=0):
    vals = [r[key] for r in rows[skip:] if isinstance(r.get(key), (int, float))]
    return statistics.mean(vals) if vals else None


PHASES = ("time/step_s", "time/generate_s", "time/evaluate_s", "time/logprob_s", "time/update_s", "perf/tokens_per_s",
          "perf/generated_tokens", "perf/gym_evals", "perf/gym_evals_per_s", "reward/mean", "rollout/correct_rate",
          "mrs/keep_frac", "mismatch/abs_mean", "mismatch/abs_max")


def learner_lines(runs, name):
    """The learner's own report lines (engine, master weights and memory plan, peak memory after a step)."""
    for path in (os.path.join(runs, f"{name}_stderr.txt"), os.path.join(runs, f"{name}.stderr")):
        if os.path.exists(path):
            return [line.strip() for line in open(path, errors="replace") if line.startswith("kgym_train: ")][:12]
    return []


def summarize(runs):
    w = windows(runs)
    out = {}
    sft = jsonl(os.path.join(runs, "sft", "metrics.jsonl"))
    if sft:
        out["sft"] = {"steps": len(sft), "loss_first": sft[0]["train/loss"], "loss_last": sft[-1]["train/loss"],
                      "step_s": mean(sft, "time/step_s", 1), "tokens_per_s": mean(sft, "train/tokens_per_s", 1)}
        grade = os.path.join(runs, "sft", "eval", "grade.json")
        if os.path.exists(grade):
            g = json.load(open(grade))["overall"]
            out["sft"].update(graded_tasks=g["num_samples"], correct_rate=g["final"]["correctness_rate"],
                              fast_in_all=g["final"]["fast_in_all"])
        out["sft"]["gpu_busy_pct"] = busy(runs, w.get("sft_start"), w.get("sft_end"))
        out["sft"]["loss_curve"] = [(r["step"], round(r["train/loss"], 4)) for r in sft
                                    if r["step"] % max(1, len(sft) // 12) == 0 or r is sft[-1]]
        out["sft"]["learner"] = learner_lines(runs, "sft")
    for name in sorted(os.listdir(runs)):
        m = jsonl(os.path.join(runs, name, "metrics.jsonl"))
        if name == "sft" or not m:
            continue
        steps = [r for r in m if "rollout/correct_rate" in r]
        kinds = sorted({k.split("/")[-1] for r in steps for k in r if k.startswith("rollout/solution/")})
        out[name] = {
            "steps": len(steps),
            "solution": {k: [round(r.get(f"rollout/solution/{k}", 0.0), 3) for r in steps] for k in kinds},
            "reward_mean": [round(r["reward/mean"], 3) for r in steps],
            "step_s": mean(steps, "time/step_s"), "generate_s": mean(steps, "time/generate_s"),
            "evaluate_s": mean(steps, "time/evaluate_s"), "logprob_s": mean(steps, "time/logprob_s"),
            "update_s": mean(steps, "time/update_s"), "tokens_per_s": mean(steps, "perf/tokens_per_s"),
            "gym_evals_per_s": mean(steps, "perf/gym_evals_per_s"), "gym_evals_per_step": mean(steps, "perf/gym_evals"),
            "mrs_keep": mean(steps, "mrs/keep_frac"), "mismatch_abs_max": max(
                (r.get("mismatch/abs_max", 0.0) for r in steps), default=None),
            "gpu_busy_pct": busy(runs, w.get(f"{name}_start"), w.get(f"{name}_end")),
            "per_step": [{k: round(r[k], 3) for k in PHASES if isinstance(r.get(k), (int, float))}
                         for r in steps],
            "learner": learner_lines(runs, name),
        }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--json")
    a = ap.parse_args()
    s = summarize(a.runs)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=2)
    for name, v in s.items():
        print(f"== {name}")
        for k, x in v.items():
            print(f"  {k}: {x}")


if __name__ == "__main__":
    main()
