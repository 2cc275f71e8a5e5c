#!/usr/bin/env python3
"""demo.json of bench/train/demo.sh from its run folder (RUNS): the model's size, the SFT and its gym grading, per
RL step of the real run and of the shuffled-reward control the fast-kernel share, the step time by phase, the
share of the step's wall the GPU is busy, and the step time at the seeds' batch estimated from the measured rates.
Written after every call, complete or not ("complete" says which).

    python3 bench/train/demo_summary.py RUNS --json demo.json [--fast-kind triton] [--solutions tasks/solutions]

fast_share (per step): of the first-turn answers to the tasks whose solutions folder holds both a fast and another
known answer (rmsnorm, add_layernorm, softmax_scale_residual), the share that is the fast one's code exactly
(RolloutMetrics' rule, kgym train's rollout/solution/<kind>); fast_share_all: rollout/solution/<kind> over every
task of the step.

Phases (means over the real run's steps, seconds; from metrics.jsonl): generate = time/generate_s; gym =
time/evaluate_s (the rollout phase's rest: lockstep evaluation); log_probs = time/logprob_s; update =
time/train_call_s - time/weight_copy_s; weight_handling = time/weight_copy_s + time/weight_push_s; other =
time/step_s less those (batch building, advantages, metrics, the learner's health calls).

gpu_required_busy = sum of NVML utilization.gpu over the nvidia-smi samples inside the real run's step windows
[time/step_start_unix, + time/step_s] / (100 x their count). utilization.gpu is the share of the sample period in
which at least one kernel ran on the device, from any process: it sees idle gaps (host-bound decoding, Triton
compilation, process starts, HTTP) but not how much of the GPU a kernel fills (one busy SM counts as 100 %) nor
whose work it is (the control arm's learner and the gym's reference and timing runs count as busy). Both arms run
at once on the GPU, so it is the share of the demo's wall the GPU had work from either arm or the gym.

seeds_batch_step_s_estimate: each phase but weight handling scaled by (16 x 16 x 3) / (prompts x n x max_turns)
of the measured run at its measured rate (tokens/s, evaluations/s: no gain from the larger batch assumed, so an
upper estimate for generation, where a larger batch decodes faster), weight handling as measured.
"""
import argparse
import csv
import datetime as dt
import json
import os
import re
import statistics

from summarize import jsonl  # bench/train/summarize.py: a run folder's jsonl, torn last lines skipped

SEEDS = 16 * 16 * 3


def mean(rows, key):
    vals = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.mean(vals) if vals else None


def model_params(runs):
    for name in ("sft_stdout.txt", "sft_stderr.txt"):
        path = os.path.join(runs, name)
        if os.path.exists(path):
            m = re.findall(r"(\d+) parameters \(", open(path, errors="replace").read())
            if m:
                return int(m[-1])
    return None


def dual_tasks(solutions, fast_kind):
    """task id -> the fast answer's code, for the tasks with the fast and at least one other non-wrong answer."""
    out = {}
    for root, _, files in os.walk(solutions):
        for f in files:
            m = re.fullmatch(r"(.+)_([a-z0-9]+)\.py", f)
            if not m or m.group(2) != fast_kind:
                continue
            stem = m.group(1)
            others = [g for g in files if g.startswith(stem + "_") and g not in (f, stem + "_wrong.py")
                      and re.fullmatch(re.escape(stem) + r"_[a-z0-9]+\.py", g)]
            if others:
                task = os.path.relpath(os.path.join(root, stem), solutions).replace(os.sep, "/")
                out[task] = open(os.path.join(root, f)).read().strip()
    return out


def fast_share(run_dir, step, dual):
    path = os.path.join(run_dir, "rollouts", f"step_{step}", "trajectories.jsonl")
    hits = n = 0
    for rec in jsonl(path):
        code = dual.get(rec.get("task_id", ""))
        turns = rec.get("turns") or []
        if code is None or not turns:
            continue
        n += 1
        hits += (turns[0].get("code") or "").strip() == code
    return round(hits / n, 4) if n else None


def phases(steps):
    if not steps:
        return None
    p = {"generate": mean(steps, "time/generate_s"), "gym": mean(steps, "time/evaluate_s"),
         "log_probs": mean(steps, "time/logprob_s")}
    call, copy, push = (mean(steps, k) or 0.0 for k in ("time/train_call_s", "time/weight_copy_s",
                                                        "time/weight_push_s"))
    p["update"] = call - copy
    p["weight_handling"] = copy + push
    p["step"] = mean(steps, "time/step_s")
    p["other"] = p["step"] - sum(p[k] or 0.0 for k in ("generate", "gym", "log_probs", "update", "weight_handling"))
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in p.items()}


def nvml_busy(runs, steps):
    path = os.path.join(runs, "gpu_util.csv")
    if not os.path.exists(path) or not steps:
        return None
    wins = [(r["time/step_start_unix"], r["time/step_start_unix"] + r["time/step_s"]) for r in steps
            if "time/step_start_unix" in r]
    vals = []
    for row in csv.reader(open(path)):
        try:  # nvidia-smi writes local time, as time/step_start_unix is read back here
            t = dt.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            u = float(row[1])
        except (ValueError, IndexError):
            continue
        if any(a <= t <= b for a, b in wins):
            vals.append(u)
    return {"value": round(statistics.mean(vals) / 100.0, 4), "samples": len(vals)} if vals else None


def arm(runs, name, fast_kind, dual):
    d = os.path.join(runs, name)
    steps = [r for r in jsonl(os.path.join(d, "metrics.jsonl")) if "rollout/correct_rate" in r]
    cfg = json.load(open(os.path.join(d, "config.json"))) if os.path.exists(os.path.join(d, "config.json")) else {}
    return {
        "steps": len(steps),
        "total_steps": cfg.get("trainer", {}).get("total_training_steps"),
        "fast_share": [fast_share(d, r["step"], dual) for r in steps],
        "fast_share_all": [round(r.get(f"rollout/solution/{fast_kind}", 0.0), 4) for r in steps],
        "reward_mean": [round(r.get("reward/mean", 0.0), 4) for r in steps],
        "correct_rate": [round(r.get("rollout/correct_rate", 0.0), 4) for r in steps],
        "mrs_keep": [round(r.get("mrs/keep_frac", 0.0), 4) for r in steps],
        "tokens_per_s": mean(steps, "perf/tokens_per_s"), "gym_evals_per_step": mean(steps, "perf/gym_evals"),
        "batch": {"prompts": cfg.get("data", {}).get("train_batch_size"), "n": cfg.get("rollout", {}).get("n"),
                  "max_turns": cfg.get("rollout", {}).get("max_turns")},
    }, steps


def sft_part(runs):
    rows = jsonl(os.path.join(runs, "sft", "metrics.jsonl"))
    out = {"steps": len(rows), "correct_rate": None}
    if rows:
        out.update(loss_first=rows[0]["train/loss"], loss_last=rows[-1]["train/loss"],
                   step_s=mean(rows[1:] or rows, "time/step_s"),
                   loss=[round(r["train/loss"], 6) for r in rows])
    grade = os.path.join(runs, "sft", "eval", "grade.json")
    if os.path.exists(grade):
        g = json.load(open(grade))["overall"]
        out.update(graded_tasks=g["num_samples"], correct_rate=g["final"]["correctness_rate"])
    return out


def estimate(ph, batch):
    if not ph or not all(batch.get(k) for k in ("prompts", "n", "max_turns")):
        return None
    k = SEEDS / (batch["prompts"] * batch["n"] * batch["max_turns"])
    scaled = sum((ph[p] or 0.0) * k for p in ("generate", "gym", "log_probs", "update", "other"))
    return round(scaled + (ph["weight_handling"] or 0.0), 2)


def summarize(runs, fast_kind, solutions, command):
    dual = dual_tasks(solutions, fast_kind)
    rl, rl_steps = arm(runs, "rl", fast_kind, dual)
    control, _ = arm(runs, "control", fast_kind, dual)
    ph = phases(rl_steps)
    busy = nvml_busy(runs, rl_steps)
    machine = open(os.path.join(runs, "machine.txt")).read().splitlines() if os.path.exists(
        os.path.join(runs, "machine.txt")) else []
    gpu = next((line for line in machine if "," in line and "MiB" in line), None)
    commit = next((line.split(": ", 1)[1] for line in machine if line.startswith("tree: ")), None)
    calls = open(os.path.join(runs, "calls.txt")).read().splitlines() if os.path.exists(
        os.path.join(runs, "calls.txt")) else []
    sft = sft_part(runs)
    done = (sft["correct_rate"] is not None and rl["total_steps"] is not None and rl["steps"] >= rl["total_steps"]
            and control["total_steps"] is not None and control["steps"] >= control["total_steps"])
    return {
        "complete": done, "command": command, "commit": commit,
        "machine": machine, "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu, "calls": calls, "model_params": model_params(runs), "sft": sft,
        "rl": rl, "control": control, "fast_share_tasks": sorted(dual),
        "gpu_required_busy": busy["value"] if busy else None,
        "gpu_required_busy_samples": busy["samples"] if busy else 0,
        "gpu_required_busy_formula": "mean(NVML utilization.gpu / 100) over nvidia-smi samples (200 ms) inside the "
                                     "rl run's step windows; sees idle gaps, not SM occupancy nor whose kernel "
                                     "(both arms and the gym count)",
        "step_s_by_phase": ph,
        "seeds_batch_step_s_estimate": estimate(ph, rl["batch"]),
        "seeds_batch_formula": "sum over generate, gym, log_probs, update, other of mean seconds x (16*16*3) / "
                               "(prompts*n*max_turns) + weight_handling, at the measured rates",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--json", required=True)
    ap.add_argument("--fast-kind", default="triton")
    ap.add_argument("--solutions", default="tasks/solutions")
    ap.add_argument("--command", default="bash bench/train/demo.sh")
    a = ap.parse_args()
    s = summarize(a.runs, a.fast_kind, a.solutions, a.command)
    with open(a.json, "w") as f:
        json.dump(s, f, indent=2)
    for k in ("complete", "model_params", "gpu_required_busy", "step_s_by_phase", "seeds_batch_step_s_estimate"):
        print(f"{k}: {s[k]}")
    print(f"sft: steps {s['sft']['steps']} correct_rate {s['sft']['correct_rate']}")
    for name in ("rl", "control"):
        print(f"{name}: steps {s[name]['steps']} fast_share {s[name]['fast_share']}")


if __name__ == "__main__":
    main()
