"""Where a decode step's time goes: the rollout engine at the 1.7 B shape, one chunk profiled kernel by kernel.

  python3 bench/train/decode_profile.py --out DIR [--batches 1,64] [--prompt 512] [--rehearse]

For each batch size: the engine decodes a few chunks to warm up, then (1) times chunks replayed from CUDA graphs
(ms per step, as rollout_speed.py) and (2) runs one chunk eagerly under torch.profiler and sums its device kernels by
name: count and time per step. The gap between (1) and the kernels' summed time per step is what the step loses to
launch latency and idle gaps between kernels inside the graph; the table says which operations make the kernels.
Writes DIR/decode_profile.json (command, commit, machine, date, GPU) and prints the table.
"""
import argparse
import collections
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rollout_speed as rs  # noqa: E402
from kgym_train.rollout import Request, RolloutEngine  # noqa: E402


def chunk(engine):
    rs.sync()
    t0 = time.perf_counter()
    engine.step()
    rs.sync()
    return time.perf_counter() - t0


def kernels(engine, steps):
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if rs.DEV == "cuda" else [])
    graphs, engine.graphs_on = engine.graphs_on, False
    with profile(activities=acts) as prof:
        engine.step()
        rs.sync()
    engine.graphs_on = graphs
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        on_device = rs.DEV != "cuda" or str(getattr(e, "device_type", "")).endswith("CUDA")
        if not on_device or (rs.DEV != "cuda" and not e.name.startswith("aten::")):
            continue
        t = getattr(e, "device_time", None) if rs.DEV == "cuda" else e.cpu_time
        if t is None:
            t = getattr(e, "cuda_time", 0.0)
        by[e.name][0] += 1
        by[e.name][1] += t
    rows = [{"kernel": k[:120], "per_step": c / steps, "us_per_step": t / steps} for k, (c, t) in by.items()]
    return sorted(rows, key=lambda r: -r["us_per_step"])


def one(policy, batch, args):
    engine = RolloutEngine(policy, slots=batch, max_len=args.prompt + 16 * args.chunk * 8, stop_ids=[],
                           chunk=args.chunk)
    prompts = rs.prompts_for(batch, args.prompt, 3)
    engine.submit([Request(p, 16 * args.chunk * 8 - 1, temperature=1.0, seed=i) for i, p in enumerate(prompts)])
    for _ in range(3):
        engine.step()  # admission, then graph capture of this shape
    times = [chunk(engine) for _ in range(3)]
    ms = 1000 * min(times) / args.chunk
    rows = kernels(engine, args.chunk)
    kernel_ms = sum(r["us_per_step"] for r in rows) / 1000
    count = sum(r["per_step"] for r in rows)
    return {"batch": batch, "ms_per_step_graph": ms, "kernel_ms_per_step": kernel_ms, "kernels_per_step": count,
            "gap_ms_per_step": ms - kernel_ms, "attention": engine.attend.backend,
            "projection_tail": engine.project.backend, "sampling": engine.sampler.backend, "top": rows[:40]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--rehearse", action="store_true", help="CPU, a small model: checks the script")
    args = ap.parse_args()
    if args.rehearse:
        rs.rehearse(width=64, heads_dim=16, vocab=512)
        args.prompt, args.chunk = min(args.prompt, 32), min(args.chunk, 4)
    os.makedirs(args.out, exist_ok=True)
    res = rs.machine_facts(sys.argv)
    policy = rs.make_policy(torch.float32 if args.rehearse else torch.bfloat16)
    res["runs"] = []
    for b in [int(x) for x in args.batches.split(",")]:
        r = one(policy, b, args)
        res["runs"].append(r)
        with open(os.path.join(args.out, "decode_profile.json"), "w") as f:
            json.dump(res, f, indent=2)
        rs.log(f"\nbatch {b}: {r['ms_per_step_graph']:.2f} ms per step from graphs; kernels {r['kernel_ms_per_step']:.2f}"
               f" ms in {r['kernels_per_step']:.0f} launches per step (gap {r['gap_ms_per_step']:.2f} ms); "
               f"attention {r['attention']}, projection tail {r['projection_tail']}, sampling {r['sampling']}")
        for row in r["top"][:25]:
            rs.log(f"  {row['us_per_step']:9.1f} us {row['per_step']:6.1f}x  {row['kernel'][:90]}")


if __name__ == "__main__":
    main()
