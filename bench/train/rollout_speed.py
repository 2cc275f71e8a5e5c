"""Rollout speed of the learner's engine (python/kgym_train/rollout.py) at the 1.7 B shape, against the bound the
hardware sets and against transformers' model.generate on the same card.

  python3 bench/train/rollout_speed.py --out DIR [--batches 1,2,4,...] [--prompt 512] [--new 512] [--quick]

Model: a random-init Qwen3 of the 1.7 B shape (28 layers, hidden 2048, MLP 6144, 16 query / 8 key-value heads of 128,
vocabulary 151 936, tied embeddings, bf16). Prompts: random token ids, distinct per sequence; every sequence
generates exactly --new tokens (no stop token), sampled at temperature 1 as RL does.

The bound: a decode step must read every weight once and every sequence's cached keys/values once,
  bytes(step) = weight bytes + sum over live sequences of (context length x KV bytes per token),
  t_min(step) = bytes(step) / B, B = the device-to-device copy bandwidth measured here ((read + write) / time of a
  4 GiB copy). Over a run: t_min = sum of t_min(step) over its decode steps; bound tokens/s = tokens / t_min.
Reported per batch size: decode tokens/s (decode phase only), end-to-end tokens/s (prefill included), ms per decode
step, fraction of the bound, graph-capture seconds (once per shape, reported apart: a warm-up run of the same
shapes precedes the timed one, as the torch.compile baseline was warmed up).

Also: greedy token identity with model.generate (fp32 and bf16, batch 8), the rollout-vs-learner log-prob mismatch
in bf16 (the engine's sampled-token log-probs against the learner's packed recompute of the same tokens: what MRS
reads), and model.generate's own speed at batch 64 as the baseline on this card. Writes DIR/rollout_speed.json.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kgym_train import losses  # noqa: E402
from kgym_train.models import Policy, transformers_available  # noqa: E402
from kgym_train.rollout import Request, RolloutEngine, kv_bytes_per_token  # noqa: E402

SHAPE = dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
             num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
             tie_word_embeddings=True, rope_theta=1000000.0)


DEV = "cuda"


def rehearse(width=256, heads_dim=64, vocab=4096):
    """The CPU rehearsal of a bench: DEV cpu, SHAPE shrunk to a 2-layer model (the GQA of the real one kept)."""
    global DEV
    DEV = "cpu"
    SHAPE.update(hidden_size=width, intermediate_size=2 * width, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=heads_dim, vocab_size=vocab)


def log(*a):
    print(*a, flush=True)


def make_policy(dtype, layers=None):
    """The random-init Qwen3 of SHAPE (the rehearsal's small one on the CPU; the pure-torch tiny model where the
    CPU has no transformers)."""
    if DEV == "cpu" and not transformers_available():
        init = dict(arch="tiny", hidden_size=SHAPE["hidden_size"], intermediate_size=SHAPE["intermediate_size"],
                    num_hidden_layers=layers or SHAPE["num_hidden_layers"],
                    num_attention_heads=SHAPE["num_attention_heads"], max_position_embeddings=8192, seed=0)
        return Policy.create(init, SHAPE["vocab_size"], 0, "cpu")
    from transformers import Qwen3Config, Qwen3ForCausalLM
    cfg = dict(SHAPE)
    if layers:
        cfg["num_hidden_layers"] = layers
    torch.manual_seed(0)
    with torch.device(DEV):
        model = Qwen3ForCausalLM(Qwen3Config(**cfg)).to(dtype)
    model.eval()
    return Policy(model, "qwen3", DEV)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth():
    if DEV != "cuda":
        return 10e9
    n = 4 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(10):
        t0 = time.perf_counter()
        b.copy_(a)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    del a, b
    return 2 * n / best


def prompts_for(batch, length, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(100, SHAPE["vocab_size"] - 100, (batch, length), generator=g).tolist()


def run_engine(engine, prompts, new, temperature=1.0, seed0=0):
    reqs = [Request(p, new, temperature=temperature, seed=seed0 + i) for i, p in enumerate(prompts)]
    engine.stats.clear()
    sync()
    t0 = time.perf_counter()
    engine.generate(reqs)
    sync()
    return reqs, time.perf_counter() - t0, dict(engine.stats)


def bound_seconds(weight_bytes, kv_token, prompt, new, batch, bw):
    total = 0.0
    for step in range(1, new):  # the first token comes from the prefill
        total += (weight_bytes + batch * (prompt + step) * kv_token) / bw
    return total


def curve(policy, args, bw, weight_bytes, kv_token):
    rows = []
    max_len = args.prompt + args.new
    most = max(args.batches)
    engine = RolloutEngine(policy, slots=most, max_len=max_len, stop_ids=[], chunk=args.chunk)
    log(f"engine: {most} slots x {max_len} tokens, KV cache {engine.cache_bytes() / 2**30:.1f} GiB, attention "
        f"{engine.attend.backend}, projection tail {engine.project.backend}, sampling {engine.sampler.backend}")
    for b in args.batches:
        prompts = prompts_for(b, args.prompt, b)
        run_engine(engine, prompts, args.new)  # warm-up: captures this batch's graphs
        capture = engine_stats_capture(engine)
        reqs, wall, st = run_engine(engine, prompts, args.new, seed0=1000)
        toks = sum(len(r.tokens) for r in reqs)
        assert all(len(r.tokens) == args.new for r in reqs), [len(r.tokens) for r in reqs][:4]
        decode_tokens = toks - b
        t_min = bound_seconds(weight_bytes, kv_token, args.prompt, args.new, b, bw)
        row = {"batch": b, "tokens": toks, "wall_s": wall, "prefill_s": st.get("prefill_s", 0.0),
               "decode_s": st.get("decode_s", 0.0), "decode_steps": st.get("decode_steps", 0),
               "tokens_per_s": toks / wall, "decode_tokens_per_s": decode_tokens / st["decode_s"],
               "ms_per_step": 1000 * st["decode_s"] / st["decode_steps"],
               "bound_tokens_per_s": decode_tokens / t_min, "capture_s_first_run": capture}
        row["fraction_of_bound"] = row["decode_tokens_per_s"] / row["bound_tokens_per_s"]
        rows.append(row)
        log(f"batch {b:4d}: {row['decode_tokens_per_s']:9.0f} tok/s decode ({row['tokens_per_s']:9.0f} end to end), "
            f"{row['ms_per_step']:6.2f} ms/step, bound {row['bound_tokens_per_s']:9.0f} tok/s -> "
            f"{100 * row['fraction_of_bound']:5.1f} %, prefill {row['prefill_s']:.2f} s, capture {capture:.1f} s")
    return rows, engine


def engine_stats_capture(engine):
    return float(engine.stats.get("capture_s", 0.0))


def hf_generate_speed(policy, batch, prompt, new):
    m = policy.model
    ids = torch.tensor(prompts_for(batch, prompt, 7), device=DEV)
    mask = torch.ones_like(ids)
    kw = dict(do_sample=True, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=new, min_new_tokens=new,
              pad_token_id=0)
    m.generate(input_ids=ids[:, :32], attention_mask=mask[:, :32], **dict(kw, max_new_tokens=8, min_new_tokens=8))
    sync()
    t0 = time.perf_counter()
    out = m.generate(input_ids=ids, attention_mask=mask, **kw)
    sync()
    dt = time.perf_counter() - t0
    toks = (out.shape[1] - prompt) * batch
    return {"batch": batch, "tokens": toks, "wall_s": dt, "tokens_per_s": toks / dt}


def greedy_identity(dtype, batch=8, prompt=64, new=64):
    """Greedy tokens of the engine vs model.generate on the same prompts."""
    policy = make_policy(dtype, layers=None)
    prompts = prompts_for(batch, prompt, 11)
    ref = policy.generate(prompts, new, [], 0, temperature=0)
    engine = RolloutEngine(policy, slots=batch, max_len=prompt + new + 8, stop_ids=[], chunk=16)
    reqs = [Request(p, new, temperature=0) for p in prompts]
    engine.generate(reqs)
    same, prefix = 0, []
    for (ids, _, _), r in zip(ref, reqs):
        same += ids == r.tokens
        k = 0
        while k < min(len(ids), len(r.tokens)) and ids[k] == r.tokens[k]:
            k += 1
        prefix.append(k)
    del engine, policy
    free_cache()
    return {"dtype": str(dtype), "sequences": batch, "identical": same, "common_prefix_tokens": prefix,
            "new_tokens": new}


def mismatch(policy, engine_reqs):
    """Engine log-probs of the sampled tokens vs the learner's packed recompute (bf16 weights, no autocast)."""
    prompts = [r.prompt for r in engine_reqs]
    resps = [r.tokens for r in engine_reqs]
    with torch.no_grad():
        lp, _, valid = losses.response_logprobs(policy, prompts, resps)
    diffs = []
    for i, r in enumerate(engine_reqs):
        learner = lp[i, :len(r.tokens)].float().cpu()
        diffs.append((learner - torch.tensor(r.logprobs)).abs())
    d = torch.cat(diffs)
    q = torch.quantile(d[:1 << 20], torch.tensor([0.5, 0.9, 0.99, 0.999]))
    return {"tokens": int(d.numel()), "abs_mean": float(d.mean()), "p50": float(q[0]), "p90": float(q[1]),
            "p99": float(q[2]), "p999": float(q[3]), "max": float(d.max())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=512)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--rehearse", action="store_true", help="CPU, a 2-layer 256-wide model: checks the script")
    args = ap.parse_args()
    if args.rehearse:
        rehearse()
    args.batches = [int(x) for x in args.batches.split(",")]
    os.makedirs(args.out, exist_ok=True)
    res = machine_facts(sys.argv)
    bw = copy_bandwidth()
    res["copy_bandwidth_GBps"] = bw / 1e9
    log(f"{res['gpu']}: device copy bandwidth {bw / 1e9:.0f} GB/s (read + write)")
    policy = make_policy(torch.bfloat16)
    weight_bytes = sum(p.numel() * p.element_size() for p in policy.model.parameters())
    kv_token = kv_bytes_per_token(policy_view(policy))
    res.update(parameters=policy.num_parameters(), weight_bytes=weight_bytes, kv_bytes_per_token=kv_token)
    log(f"{policy.num_parameters()} parameters, {weight_bytes / 1e9:.2f} GB of weights, {kv_token} KV bytes/token")
    rows, engine = curve(policy, args, bw, weight_bytes, kv_token)
    res["curve"] = rows
    res["engine_stats_graphs"] = int(engine.stats.get("graphs", 0))
    dump(args.out, res)
    reqs, _, _ = run_engine(engine, prompts_for(64, args.prompt, 5), args.new, seed0=5000)
    res["logprob_mismatch_bf16"] = mismatch(policy, reqs)
    log("log-prob mismatch (bf16, engine vs learner):", json.dumps(res["logprob_mismatch_bf16"]))
    if DEV == "cuda":
        res["peak_memory_GiB"] = torch.cuda.max_memory_allocated() / 2**30
    del engine
    free_cache()
    dump(args.out, res)
    if not args.skip_hf:
        try:
            res["hf_generate_dynamic_batch64"] = hf_generate_speed(policy, 64, args.prompt, args.new)
            log("model.generate (dynamic cache), batch 64:", json.dumps(res["hf_generate_dynamic_batch64"]))
        except Exception as e:  # the baseline must not cost the engine's numbers
            res["hf_generate_error"] = repr(e)
            log("model.generate failed:", repr(e))
        dump(args.out, res)
    del policy
    free_cache()
    try:
        res["greedy_identity"] = [greedy_identity(torch.float32), greedy_identity(torch.bfloat16)]
        log("greedy identity:", json.dumps(res["greedy_identity"]))
    except Exception as e:
        res["greedy_identity_error"] = repr(e)
        log("greedy identity failed:", repr(e))
    dump(args.out, res)
    b64 = next((r for r in rows if r["batch"] == 64), None)
    if b64:
        hf = res.get("hf_generate_dynamic_batch64", {}).get("tokens_per_s")
        log(f"\nbatch 64: {b64['decode_tokens_per_s']:.0f} tok/s decode = {100 * b64['fraction_of_bound']:.1f} % of "
            f"the bound ({b64['bound_tokens_per_s']:.0f}); end to end {b64['tokens_per_s']:.0f} tok/s"
            + (f"; model.generate {hf:.0f} tok/s -> {b64['tokens_per_s'] / hf:.1f}x" if hf else ""))


def machine_facts(argv):
    """command, date, machine, torch, transformers, GPU and the tree's commit: $KGYM_TREE where the caller names it
    (the device tool's copy of .git can be stale), else git's HEAD, else bench/gpu/pack.sh's commit.txt."""
    res = {"command": " ".join(argv), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.node(),
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu (rehearsal)"}
    try:
        import transformers
        res["transformers"] = transformers.__version__
    except ImportError:
        res["transformers"] = None
    commit = os.environ.get("KGYM_TREE") or subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT,
                                                           capture_output=True, text=True).stdout.strip()
    packed = os.path.join(ROOT, "build", "gpu", "commit.txt")
    if not commit and os.path.exists(packed):
        commit = open(packed).readline().strip()
    res["commit"] = commit or "unknown"
    return res


def free_cache():
    if DEV == "cuda":
        torch.cuda.empty_cache()


def policy_view(policy):
    from kgym_train.decoder import view_of
    return view_of(policy)


def dump(out, res):
    with open(os.path.join(out, "rollout_speed.json"), "w") as f:
        json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
