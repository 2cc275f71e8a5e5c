#!/usr/bin/env python3
"""Plots the RL experiment: per step, the share of rollouts that reproduce the fast (Triton) solution, for the
RL run and its shuffled-reward control, from their metrics.jsonl files.

    python3 bench/train/plot_rl.py RUN_METRICS.jsonl CONTROL_METRICS.jsonl --out plot.png [--key rollout/solution/triton]
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(path, key):
    steps, vals = [], []
    for line in open(path):
        r = json.loads(line)
        if key in r:
            steps.append(r["step"])
            vals.append(r[key])
    return steps, vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("control")
    ap.add_argument("--out", required=True)
    ap.add_argument("--key", default="rollout/solution/triton")
    ap.add_argument("--title", default="RL on gym rewards: rollouts choosing the fast kernel")
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(7, 4))
    for path, label, style in ((a.run, "real rewards", "o-"), (a.control, "shuffled rewards (control)", "s--")):
        s, v = series(path, a.key)
        ax.plot(s, v, style, label=label)
    ax.axhline(0.9, color="gray", lw=0.8, ls=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("RL step")
    ax.set_ylabel(a.key)
    ax.set_title(a.title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)


if __name__ == "__main__":
    main()
