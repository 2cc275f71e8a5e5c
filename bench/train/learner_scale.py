"""The learner at the 1.7 B shape on one GPU: packed SFT / PPO-style steps with bf16 parameters, float32 master
weights in the optimizer, activation checkpointing and chunked float32 log-probs; the memory plan against
torch.cuda.max_memory_allocated, and tokens/s.

  python3 bench/train/learner_scale.py --out DIR [--tokens 32768] [--steps 4] [--kv-gb 24]

Each step: random sequences of 512-4096 tokens (half of each learned) packed into micro-batches of at most
--tokens tokens until a global batch of 64 k tokens, forward + backward of the masked cross-entropy
(losses.sft_token_losses), then the optimizer step (AdamW on the float32 masters). The rollout engine's KV cache
(--kv-gb) is allocated first, as the learner holds it beside training. Writes DIR/learner_scale.json.
"""
import argparse
import json
import os
import platform
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kgym_train import losses  # noqa: E402
from kgym_train.learner import make_optimizer  # noqa: E402
from kgym_train.precision import MasterWeights, describe, memory_plan  # noqa: E402
import rollout_speed  # noqa: E402
from rollout_speed import SHAPE, make_policy  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--kv-gb", type=float, default=24.0)
    ap.add_argument("--rehearse", action="store_true", help="CPU, a 2-layer 256-wide model: checks the script")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.rehearse:
        rollout_speed.DEV = "cpu"
        SHAPE.update(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=64, vocab_size=4096)
        torch.cuda.synchronize = lambda: None
        torch.cuda.max_memory_allocated = lambda: 0
        torch.cuda.get_device_name = lambda *a: "cpu (rehearsal)"
    else:
        torch.cuda.reset_peak_memory_stats()
    policy = make_policy(torch.bfloat16)
    policy.model.train()
    policy.enable_checkpointing()
    kv = torch.empty(int(args.kv_gb * 2**30), dtype=torch.uint8, device=rollout_speed.DEV)  # the engine's cache, held
    optim = {"lr": 1e-5, "weight_decay": 0.01, "betas": [0.9, 0.95]}
    opt = MasterWeights(policy.model.parameters(), lambda m: make_optimizer(m, optim))
    plan = memory_plan(policy.model, "adamw", True, args.tokens, True, kv.numel())
    print("plan:", describe(plan), flush=True)
    g = torch.Generator().manual_seed(0)
    rows = []
    for step in range(args.steps):
        seqs, total = [], 0
        while total < args.batch_tokens:
            n = int(torch.randint(512, 4097, (1,), generator=g))
            seqs.append(torch.randint(100, SHAPE["vocab_size"] - 100, (n,), generator=g).tolist())
            total += n
        masks = [[0] * (len(s) // 2) + [1] * (len(s) - len(s) // 2) for s in seqs]
        targets = sum(sum(m[1:]) for m in masks)
        micro = losses.micro_batches([len(s) for s in seqs], args.tokens)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = 0.0
        for mb in micro:
            s, _ = losses.sft_token_losses(policy, [seqs[i] for i in mb], [masks[i] for i in mb])
            (s / targets).backward()
            loss += float(s) / targets
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        norm = float(torch.nn.utils.clip_grad_norm_(opt.grad_params(), 1.0))
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        row = {"step": step + 1, "tokens": total, "micro_batches": len(micro), "loss": loss, "grad_norm": norm,
               "fwd_bwd_s": t1 - t0, "optimizer_s": t2 - t1, "tokens_per_s": total / (t2 - t0),
               "peak_GiB": torch.cuda.max_memory_allocated() / 2**30}
        rows.append(row)
        print(json.dumps(row), flush=True)
    res = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.node(),
           "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "parameters": policy.num_parameters(),
           "plan_bytes": plan, "peak_bytes": torch.cuda.max_memory_allocated(), "steps": rows}
    res["peak_over_plan"] = res["peak_bytes"] / plan["total"]
    print(f"peak {res['peak_bytes'] / 2**30:.2f} GiB vs plan {plan['total'] / 2**30:.2f} GiB "
          f"({100 * res['peak_over_plan']:.0f} %)", flush=True)
    with open(os.path.join(args.out, "learner_scale.json"), "w") as f:
        json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
