"""Synthetic data for the dashboard's tests and bench: an agent run (trajectories.jsonl) and a training run
(config.json, metrics.jsonl, rollouts/ and val/ step folders) in the layouts of agent/run_dir.h and
grade/run_folder.h, and a job store filled with many finished jobs. Deterministic: the same arguments write the
same bytes."""
import json
import math
import os
import random
import sqlite3

FAMILIES = ["output aliases input", "caching", "thread injection"]


def _result(rng, level, turn):
    roll = rng.random() + 0.08 * turn
    if roll < 0.15:
        return {"outcome": "compile_error", "compiled": False, "correctness": False, "speedup": 0.0,
                "error_message": "SyntaxError: invalid syntax (line 12)", "outcome_detail": "compile error"}
    if roll < 0.25:
        fam = rng.choice(FAMILIES)
        return {"outcome": "hacked", "compiled": True, "correctness": False, "speedup": 0.0,
                "outcome_detail": f"hacked ({fam}): seen by the supervisor", "decoy_kernel": False}
    if roll < 0.45:
        return {"outcome": "incorrect", "compiled": True, "correctness": False, "speedup": 0.0,
                "outcome_detail": "mismatch on trial 2: max abs diff 0.31"}
    speed = round(math.exp(rng.gauss(0.15 * turn - 0.1 * int(level), 0.45)), 3)
    return {"outcome": "correct", "compiled": True, "correctness": True, "speedup": speed,
            "kernel_runtime": round(1.0 / speed, 4), "reference_runtime": 1.0, "outcome_detail": ""}


def trajectory(rng, task, level, sample, turns=3, response_extra=""):
    recs = []
    for t in range(1, turns + 1):
        r = _result(rng, level, t)
        reward = 0.0 if not r["correctness"] else round(0.5 + 0.5 * min(r["speedup"], 3.0), 4)
        recs.append({"turn": t, "response": f"Turn {t}: here is a faster kernel.{response_extra}\n```python\n...\n```",
                     "code": f"import torch\nclass ModelNew(torch.nn.Module):\n    # {task} turn {t}\n    pass\n",
                     "result": r, "reward": reward,
                     "feedback_message": f"Your kernel was {r['outcome']} (speedup {r['speedup']})."})
    return {"key": f"{task}#{sample}", "task_id": task, "level": str(level), "sample": sample, "status": "done",
            "model": "synthetic", "messages": [{"role": "user", "content": f"Write a Triton kernel for {task}."}],
            "turns": recs}


def write_trajectories(path, rng, tasks=12, samples=4, response_extra=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(tasks):
            level = 1 + i % 3
            for s in range(samples):
                f.write(json.dumps(trajectory(rng, f"level{level}/task_{i:02d}", level, s,
                                              response_extra=response_extra)) + "\n")


def agent_run(path, seed=1, truncated=False, response_extra=""):
    """An agent run; `truncated` cuts the last line in half, as a killed writer leaves it."""
    rng = random.Random(seed)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"model": "synthetic", "turns": 3, "samples": 4}, f)
    traj = os.path.join(path, "trajectories.jsonl")
    write_trajectories(traj, rng, response_extra=response_extra)
    if truncated:
        with open(traj, "rb") as f:
            data = f.read()
        last = data.rstrip(b"\n").rfind(b"\n")
        with open(traj, "wb") as f:
            f.write(data[: last + 1 + (len(data) - last) // 2])


METRIC_KEYS = ["reward/mean", "reward/std", "val/fast@1", "val/fast@1.2", "adv/mean", "adv/std", "mrs/keep_frac",
               "prs/keep_frac", "actor/entropy", "actor/grad_norm", "mismatch/kl", "perf/tokens_per_s",
               "time/generate_s", "time/train_s"]


def training_run(path, steps=40, seed=2):
    rng = random.Random(seed)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"algorithm": "trloo", "mrs": True, "prs": True, "model": "synthetic-8b", "batch": 64}, f)
    with open(os.path.join(path, "metrics.jsonl"), "w") as f:
        for step in range(1, steps + 1):
            x = step / steps
            row = {"step": step, "time": f"2026-12-04T10:{step % 60:02d}:00Z",
                   "reward/mean": round(0.3 + 0.5 * x + rng.gauss(0, 0.03), 4), "reward/std": round(0.4 - 0.1 * x, 4),
                   "adv/mean": round(rng.gauss(0, 0.01), 4), "adv/std": round(0.9 - 0.2 * x, 4),
                   "mrs/keep_frac": round(0.7 + 0.2 * x, 4), "prs/keep_frac": round(0.8 + 0.1 * x, 4),
                   "actor/entropy": round(0.9 - 0.4 * x + rng.gauss(0, 0.02), 4),
                   "actor/grad_norm": round(1 + rng.random(), 4), "mismatch/kl": round(0.002 + 0.001 * rng.random(), 5),
                   "perf/tokens_per_s": round(5200 + 300 * rng.random()), "time/generate_s": round(40 + 5 * rng.random(), 2),
                   "time/train_s": round(12 + rng.random(), 2)}
            if step % 10 == 0:
                row["val/fast@1"] = round(0.2 + 0.3 * x, 4)
                row["val/fast@1.2"] = round(0.1 + 0.2 * x, 4)
            f.write(json.dumps(row) + "\n")
    for step in (10, 20, 30, 40):
        write_trajectories(os.path.join(path, f"rollouts/step_{step}/trajectories.jsonl"), rng, tasks=6, samples=2)
        write_trajectories(os.path.join(path, f"val/step_{step}/trajectories.jsonl"), rng, tasks=9, samples=2)


def fill_store(path, n):
    """n finished jobs written straight into a store that `kgym serve` created (its schema), each with a result of
    realistic size (100 timing samples)."""
    outcomes = ["correct", "incorrect", "compile_error", "hacked"]
    db = sqlite3.connect(path)
    rows = []
    for i in range(n):
        o = outcomes[i % 4]
        detail = "hacked (caching): fresh sets slow" if o == "hacked" else ""
        result = {"task_id": f"bulk-{i:05d}", "outcome": o, "outcome_detail": detail, "speedup": 1.0 + (i % 7) / 10,
                  "kernel_timing": {"samples_ms": [0.1 + j * 1e-4 for j in range(100)]}}
        rows.append((f"bulk-{i:05d}", 1, 2, json.dumps({"request": {"kernel_code": "x" * 2000}}), 1, 0,
                     json.dumps(result), 1000.0 + i, 1000.5 + i, o, "caching" if o == "hacked" else ""))
    db.executemany("INSERT INTO jobs (id, generation, state, request, priority, deadline, result, created_at, finished_at,"
                   " outcome, hack_family) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()
