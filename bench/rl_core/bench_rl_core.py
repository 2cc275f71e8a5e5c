#!/usr/bin/env python3
"""bench/rl_core: 1M turn rows (16 rollouts x 3 turns x many prompts) through returns + TRLOO + MRS + PRS,
kgym_rl (C++ through the pybind11 module, zero-copy NumPy arrays) against a vectorised NumPy implementation of
the same math, in the same run on the same data. Both results are checked to agree before timing.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/rl_core/bench_rl_core.py [--rows 1000000] [--tokens 8]
"""
import argparse
import datetime
import json
import os
import platform
import socket
import subprocess
import sys
import time

import numpy as np

import kgym_rl

ROLLOUTS, TURNS = 16, 3
M = np.uint64(0xFFFFFFFFFFFFFFFF)


def make_batch(rows, tokens, seed=0):
    rng = np.random.default_rng(seed)
    prompts = max(1, rows // (ROLLOUTS * TURNS))
    n_traj = prompts * ROLLOUTS
    n = n_traj * TURNS
    uid = np.repeat(np.arange(prompts, dtype=np.int64), ROLLOUTS * TURNS)
    traj = np.repeat(np.arange(n_traj, dtype=np.int64), TURNS)
    # Uneven turn counts, padding first (VERL layout): 70% three turns, 20% two, 10% one.
    k = rng.choice([3, 2, 1], size=n_traj, p=[0.7, 0.2, 0.1])
    col = np.tile(np.arange(TURNS), n_traj)
    pad = np.repeat(TURNS - k, TURNS)
    turn = np.where(col >= pad, col - pad + 1, -1).astype(np.int64)
    correct = (rng.random(n) < 0.5) & (turn > 0)
    speed = np.where(correct, rng.lognormal(0.0, 0.4, n), 0.0)
    cov = np.where(correct, rng.random(n), 0.0)
    reward = np.where(turn > 0, 0.5 * correct + 0.5 * np.minimum(speed, 3.0) + 0.5 * correct * cov, 0.0)
    loss_mask = ((turn > 0) & (rng.random(n) < 0.95)).astype(np.uint8)
    rollout = rng.normal(-1.0, 0.5, size=(n, tokens)).astype(np.float32)
    train = (rollout + rng.normal(0.0, 0.0015, size=(n, tokens))).astype(np.float32)
    tmask = ((rng.random((n, tokens)) < 0.9) & (loss_mask[:, None] == 1)).astype(np.uint8)
    return dict(uid=uid, traj=traj, turn=turn, reward=reward, loss_mask=loss_mask, coverage=cov,
                correct=correct.astype(np.uint8), logp_train=train, logp_rollout=rollout, token_mask=tmask,
                num_groups=prompts)


# ----------------------------------------------------------------------------- NumPy implementation
def splitmix64(x):
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)) & M
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & M
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & M
        return z ^ (z >> np.uint64(31))


def numpy_pipeline(b, seed=0, lower=0.999, upper=1.001, veto=1e-4):
    turn, mask = b["turn"], b["loss_mask"]
    real = turn > 0
    valid = real & (mask == 1)
    # returns (gamma = 1): reward-to-go over the fixed 3-turn blocks, masked rewards count 0
    r = np.where(valid, b["reward"], 0.0).reshape(-1, TURNS)
    g = np.cumsum(r[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    g = np.where(real, g, 0.0)
    # TRLOO over (uid, turn)
    slot = b["uid"] * TURNS + np.where(real, turn - 1, 0)
    nslots = b["num_groups"] * TURNS
    s = np.bincount(slot[valid], weights=g[valid], minlength=nslots)
    c = np.bincount(slot[valid], minlength=nslots).astype(np.float64)
    n = c[slot]
    k = np.where(n > 1, n / np.maximum(n - 1, 1), 1.0)
    mean = np.where(n > 1, s[slot] / np.maximum(n, 1), 0.0)
    adv = np.where(valid, np.where(n > 1, g * k - mean * k, g), 0.0)
    # MRS geometric + per-turn veto
    tm = b["token_mask"].astype(bool)
    lr = b["logp_train"].astype(np.float64) - b["logp_rollout"].astype(np.float64)
    row_sum = np.where(tm, lr, 0.0).sum(axis=1)
    row_cnt = tm.sum(axis=1)
    row_min = np.where(tm, lr, np.inf).min(axis=1)
    real_rows = real
    tsum = np.where(real_rows, row_sum, 0.0).reshape(-1, TURNS).sum(axis=1)
    tcnt = np.where(real_rows, row_cnt, 0).reshape(-1, TURNS).sum(axis=1)
    logw = np.where(tcnt > 0, tsum / np.maximum(tcnt, 1), 0.0)
    w = np.repeat(np.exp(np.clip(logw, -20, 20)), TURNS)
    vetoed = (row_cnt > 0) & (row_min < np.log(veto))
    ratio = np.where(real, w, 1.0)
    mrs_keep = np.where(real, (w >= lower) & (w <= upper) & ~vetoed, True).astype(np.uint8)
    # PRS: coverage rounded to 2 decimals, soft ramp for correct turns, counter-based Bernoulli
    cov = np.round(b["coverage"], 2)
    p = np.where(b["correct"] == 1, np.clip((cov - 0.3) / 0.1, 0.0, 1.0), 1.0)
    idx = np.arange(len(p), dtype=np.uint64)
    u = (splitmix64(np.uint64(seed) ^ splitmix64(idx)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    prs_keep = (u < p).astype(np.uint8)
    return dict(returns=g, advantages=adv, ratio=ratio, mrs_keep=mrs_keep, keep_prob=p, prs_keep=prs_keep)


# ----------------------------------------------------------------------------- kgym_rl
def kgym_stages(b, seed=0):
    out = {}
    t = {}
    t0 = time.perf_counter()
    g, a = kgym_rl.advantages(b["uid"], b["traj"], b["turn"], b["reward"], b["loss_mask"], estimator="trloo",
                              num_groups=b["num_groups"])
    t1 = time.perf_counter()
    ratio, keep = kgym_rl.mrs_padded(b["traj"], b["turn"], b["logp_train"], b["logp_rollout"], b["token_mask"])
    t2 = time.perf_counter()
    p, pk = kgym_rl.prs(b["coverage"], b["correct"], seed=seed)
    t3 = time.perf_counter()
    out.update(returns=g, advantages=a, ratio=ratio, mrs_keep=keep, keep_prob=p, prs_keep=pk)
    t.update(returns_trloo=t1 - t0, mrs_tokens=t2 - t1, prs=t3 - t2)
    return out, t


def kgym_rows_only(b, stats, seed=0):
    """The same pipeline when the trainer hands per-row log-ratio sums (reduced where its tensors live)."""
    kgym_rl.advantages(b["uid"], b["traj"], b["turn"], b["reward"], b["loss_mask"], num_groups=b["num_groups"])
    kgym_rl.mrs_from_stats(b["traj"], b["turn"], *stats)
    kgym_rl.prs(b["coverage"], b["correct"], seed=seed)


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), ts


def load_average():
    try:
        return [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        return None


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"uname": " ".join(platform.uname()), "cpu_model": cpu, "cores": os.cpu_count(),
            "python": sys.version.split()[0], "numpy": np.__version__}


def git_commit():
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], text=True,
                                       cwd=os.path.dirname(os.path.abspath(__file__))).strip()
    except Exception:
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--tokens", type=int, default=8, help="response tokens per row for MRS")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", default=None, help="results JSON (default bench/results/rl_core-<host>.json)")
    args = ap.parse_args()

    b = make_batch(args.rows, args.tokens)
    n = len(b["turn"])
    ref = numpy_pipeline(b)
    got, _ = kgym_stages(b)
    for key in ref:
        if key in ("returns", "advantages", "ratio", "keep_prob"):
            np.testing.assert_allclose(got[key], ref[key], rtol=1e-9, atol=1e-9, err_msg=key)
        else:
            mismatch = int(np.sum(got[key] != ref[key]))
            assert mismatch == 0, f"{key}: {mismatch} rows differ"

    offsets = np.arange(n + 1, dtype=np.int64) * args.tokens
    stats = kgym_rl.summarize_log_ratios(offsets, b["logp_train"].ravel().astype(np.float64),
                                         b["logp_rollout"].ravel().astype(np.float64), b["token_mask"].ravel())

    stage_times = {"returns_trloo": [], "mrs_tokens": [], "prs": []}
    for _ in range(args.reps):
        _, t = kgym_stages(b)
        for k, v in t.items():
            stage_times[k].append(v)
    kgym_full, kgym_full_all = median_time(lambda: kgym_stages(b), args.reps)
    kgym_rows, kgym_rows_all = median_time(lambda: kgym_rows_only(b, stats), args.reps)
    numpy_full, numpy_full_all = median_time(lambda: numpy_pipeline(b), max(3, args.reps // 3))

    mrs_name = f"kgym_rl MRS geometric ({args.tokens} tok/row, f32)"
    table = [
        ("kgym_rl returns+TRLOO", stage_times["returns_trloo"]),
        (mrs_name, stage_times["mrs_tokens"]),
        ("kgym_rl PRS", stage_times["prs"]),
        ("kgym_rl full pipeline (tokens)", kgym_full_all),
        ("kgym_rl full pipeline (row log-ratio sums)", kgym_rows_all),
        ("NumPy full pipeline (tokens)", numpy_full_all),
    ]
    print(f"rl_core: {n} rows ({b['num_groups']} prompts x {ROLLOUTS} rollouts x {TURNS} turns), "
          f"{n * args.tokens} tokens, {args.reps} reps, load average {load_average()}")
    print(f"{'stage':<48}{'median ms':>12}{'min ms':>10}")
    for name, ts in table:
        print(f"{name:<48}{np.median(ts) * 1e3:>12.2f}{min(ts) * 1e3:>10.2f}")
    print(f"{'speedup kgym_rl vs NumPy (full pipeline, median)':<48}{numpy_full / kgym_full:>11.1f}x"
          f"{min(numpy_full_all) / min(kgym_full_all):>9.1f}x")

    host = socket.gethostname()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results",
                                   f"rl_core-{host}.json")
    result = {
        "benchmark": "rl_core",
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "git_commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "machine": machine(),
        "rows": n, "tokens_per_row": args.tokens, "prompts": b["num_groups"], "rollouts": ROLLOUTS, "turns": TURNS,
        "reps": args.reps,
        "agreement": "returns/advantages/ratio/keep_prob within 1e-9; MRS and PRS keep flags identical",
        "load_average": load_average(),
        "median_s": {name: float(np.median(ts)) for name, ts in table},
        "min_s": {name: float(min(ts)) for name, ts in table},
        "speedup_vs_numpy_median": numpy_full / kgym_full,
        "speedup_vs_numpy_min": min(numpy_full_all) / min(kgym_full_all),
        "raw_s": {"kgym_full": kgym_full_all, "kgym_rows": kgym_rows_all, "numpy_full": numpy_full_all,
                  **{f"kgym_{k}": v for k, v in stage_times.items()}},
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
