"""The rollout engine at the RL shape: Dr.Kernel's batch of 16 prompts x 16 samples, 1 536-token prompts, response
lengths drawn per sample, temperature 1, in the KV memory the learner leaves (24 GiB), against the bound the
hardware sets over the run's own schedule.

  python3 bench/train/rl_shape.py --out DIR [--prompts 16] [--n 16] [--prompt 1536] [--kv-gb 24] [--slots 256]
                                  [--page 64] [--rehearse]

Model: the random-init Qwen3 of the 1.7 B shape that rollout_speed.py uses (bf16). Prompts: random ids, one per
group, each sampled n times. Response lengths: log-normal, median 830 tokens, sigma 0.69 (so ~1 % reach the 4 096
cap), clipped to [16, 4096], drawn once per sample from --seed; each sample runs to its length (no stop token), so
the schedule is fixed by the draw whatever the random weights emit. One untimed pass of the same schedule
(other seeds) captures the CUDA graphs first.

The bound over the run's own schedule (the engine counts what it did):
  decode    t_dec = (working steps x weight bytes + KV token reads x KV bytes per token) / B
            working steps: decode steps that produced at least one token; KV token reads: for every token
            produced, the keys/values of the context it attended to (a sample's shared prompt counted each time:
            the attention reads it per sample); B: the device copy bandwidth measured here ((read + write) / time
            of a 4 GiB copy).
  prefill   t_pre = 2 x parameters x prefill tokens / F, F: the bf16 matmul rate measured here (8192^3, best of 10).
  fraction_of_bound = (t_dec + t_pre) / wall, wall = the timed generate call from submission to the last token.
  fraction_of_bound_shared_once: the same with a prompt's shared pages counted once per step for its whole group
            (the least any attention must read; above it, the kernel is re-reading shared pages from HBM).
Writes DIR/rl_shape.json: requests, n, prompt_tokens, kv_gb, slots, page_size, tokens_per_s, fraction_of_bound,
prefill_tokens, distinct_prompt_tokens, recompute_tokens, evicted, live_peak, the share of chunks run with under a
quarter of the peak live, and the engine's counters; command, commit, machine, date, GPU.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rollout_speed as rs  # noqa: E402  (the model shape, the bandwidth probe, machine facts)
from kgym_train.decoder import view_of  # noqa: E402
from kgym_train.rollout import Request, RolloutEngine, kv_bytes_per_token  # noqa: E402


def response_lengths(count, seed, median=830.0, sigma=0.69, cap=4096, floor=16):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(count, generator=g, dtype=torch.float64)
    return [int(min(cap, max(floor, round(median * math.exp(sigma * float(x)))))) for x in z]


def matmul_rate():
    if rs.DEV != "cuda":
        return 1e11
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(10):
        t0 = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def schedule(args, seed):
    g = torch.Generator().manual_seed(seed)
    vocab = 400 if args.rehearse else rs.SHAPE["vocab_size"] - 100
    prompts = torch.randint(100, vocab, (args.prompts, args.prompt), generator=g).tolist()
    lengths = response_lengths(args.prompts * args.n, seed, median=args.median, cap=args.cap)
    reqs = []
    for i, p in enumerate(prompts):
        for k in range(args.n):
            reqs.append(Request(p, lengths[i * args.n + k], temperature=1.0, seed=seed * 100003 + i * args.n + k))
    return reqs


def run(engine, reqs):
    engine.stats.clear()
    engine.trace = []
    rs.sync()
    t0 = time.perf_counter()
    engine.generate(reqs)
    rs.sync()
    return time.perf_counter() - t0


def measure(args, res):
    policy = rs.make_policy(torch.float32 if args.rehearse else torch.bfloat16)
    view = view_of(policy)
    kvpt = kv_bytes_per_token(view)
    weight_bytes = sum(p.numel() * p.element_size() for p in policy.model.parameters())
    params = policy.num_parameters()
    max_len = args.prompt + args.cap
    kv_tokens = int(args.kv_gb * 2**30 // kvpt)
    engine = RolloutEngine(policy, slots=args.slots, max_len=max_len, stop_ids=[], chunk=args.chunk,
                           kv_tokens=kv_tokens, page_size=args.page)
    rs.log(f"engine: {args.slots} slots, KV pool {kv_tokens} tokens ({engine.cache_bytes() / 2**30:.2f} GiB, pages "
           f"of {args.page}), attention {engine.attend.backend}, projection tail {engine.project.backend}, "
           f"sampling {engine.sampler.backend}, CUDA graphs {'on' if engine.graphs_on else 'off'}")
    warm = run(engine, schedule(args, args.seed + 1))
    rs.log(f"warm-up pass {warm:.1f} s ({engine.stats.get('graphs', 0)} graphs captured)")
    reqs = schedule(args, args.seed)
    wall = run(engine, reqs)
    st, trace = dict(engine.stats), engine.trace
    tokens = sum(len(r.tokens) for r in reqs)
    assert all(len(r.tokens) == r.max_tokens for r in reqs), "a sample ended before its drawn length"
    t_dec = (st.get("working_steps", 0) * weight_bytes + st.get("kv_token_reads", 0) * kvpt) / res["copy_bandwidth"]
    t_pre = 2 * params * st.get("prefill_tokens", 0) / res["matmul_flops"]
    t_dec_distinct = (st.get("working_steps", 0) * weight_bytes
                      + st.get("kv_token_reads_distinct", 0) * kvpt) / res["copy_bandwidth"]
    peak = max((n for n, _ in trace), default=0)
    thin = sum(1 for n, _ in trace if n < peak / 4)
    res.update(requests=len(reqs), n=args.n, prompts=args.prompts, prompt_tokens=args.prompt, kv_gb=args.kv_gb,
               slots=args.slots, page_size=args.page, chunk=args.chunk, kv_pool_tokens=kv_tokens,
               parameters=params, weight_bytes=weight_bytes, kv_bytes_per_token=kvpt,
               attention=engine.attend.backend, projection_tail=engine.project.backend,
               sampling=engine.sampler.backend, response_tokens=tokens,
               response_median=sorted(r.max_tokens for r in reqs)[len(reqs) // 2],
               response_max=max(r.max_tokens for r in reqs), wall_s=wall, tokens_per_s=tokens / wall,
               bound_decode_s=t_dec, bound_prefill_s=t_pre, fraction_of_bound=(t_dec + t_pre) / wall,
               bound_decode_shared_once_s=t_dec_distinct,
               fraction_of_bound_shared_once=(t_dec_distinct + t_pre) / wall,
               prefill_tokens=st.get("prefill_tokens", 0), distinct_prompt_tokens=len({tuple(r.prompt) for r in reqs})
               * args.prompt, recompute_tokens=st.get("recompute_tokens", 0), evicted=st.get("evicted", 0),
               live_peak=st.get("live_peak", 0), chunks=len(trace), chunks_under_quarter_live=thin,
               share_chunks_under_quarter_live=thin / max(1, len(trace)), decode_s=st.get("decode_s", 0.0),
               admission_s=st.get("prefill_s", 0.0), engine_stats={k: float(v) for k, v in st.items()})
    if rs.DEV == "cuda":
        res["peak_memory_GiB"] = torch.cuda.max_memory_allocated() / 2**30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--prompt", type=int, default=1536)
    ap.add_argument("--cap", type=int, default=4096, help="the longest response")
    ap.add_argument("--median", type=float, default=830.0, help="the median response")
    ap.add_argument("--kv-gb", type=float, default=24.0)
    ap.add_argument("--slots", type=int, default=256)
    ap.add_argument("--page", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rehearse", action="store_true", help="CPU, a small model and a small batch: checks the script")
    args = ap.parse_args()
    if args.rehearse:
        rs.rehearse(width=64, heads_dim=16, vocab=512)
        args.median = min(args.median, 13.0)
        args.prompts, args.n, args.prompt, args.cap = min(args.prompts, 3), min(args.n, 4), min(args.prompt, 48), \
            min(args.cap, 64)
        args.kv_gb = min(args.kv_gb, 0.0005)
        args.slots = min(args.slots, 8)
        args.page = min(args.page, 16)
    os.makedirs(args.out, exist_ok=True)
    res = rs.machine_facts(sys.argv)
    res["copy_bandwidth"] = rs.copy_bandwidth()
    res["matmul_flops"] = matmul_rate()
    rs.log(f"{res['gpu']}: copy bandwidth {res['copy_bandwidth'] / 1e9:.0f} GB/s, bf16 matmul "
           f"{res['matmul_flops'] / 1e12:.0f} TFLOP/s")
    measure(args, res)
    with open(os.path.join(args.out, "rl_shape.json"), "w") as f:
        json.dump(res, f, indent=2)
    rs.log(f"\n{res['requests']} requests ({res['prompts']} prompts x {res['n']}), prompts {res['prompt_tokens']} "
           f"tokens, responses median {res['response_median']} max {res['response_max']}, KV {res['kv_gb']} GiB, "
           f"{res['slots']} slots (peak {res['live_peak']} live, {res['evicted']} evicted)")
    rs.log(f"{res['tokens_per_s']:.0f} tok/s = {100 * res['fraction_of_bound']:.1f} % of the bound over this schedule; "
           f"prefill tokens {res['prefill_tokens']} vs distinct prompt tokens {res['distinct_prompt_tokens']} "
           f"(+ {res['recompute_tokens']} recomputed after eviction); "
           f"{100 * res['share_chunks_under_quarter_live']:.0f} % of chunks under a quarter of the peak live")


if __name__ == "__main__":
    main()
