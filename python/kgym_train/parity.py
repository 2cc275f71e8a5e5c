"""python -m kgym_train.parity: the learner's collective operations on fixed synthetic rows, on as many ranks as
it is started with, so a run on one process and a run under torchrun can be compared number for number.

  python -m kgym_train.parity --config RESOLVED_RL.json --out R.json [--params P.pt] [--rows 12] [--steps 2]
  python -m torch.distributed.run --nproc_per_node 2 -m kgym_train.parity ... (the same, sharded)

In order, on the config's model (RL config: the actor section; trainer.sharding picks fsdp2 or replicate):
  1. log-probs and entropies of every row under the initial weights, and greedy generations of 4 prompts;
  2. --steps SFT steps (kgym sft's sft_step: masked cross-entropy normalised by the batch's assistant tokens);
  3. --steps PPO steps (Learner.ppo_step, old log-probs = step-1 log-probs shifted so every clip branch occurs).
Rank 0 writes R.json: per step the loss, the pre-clip gradient norm and the step's seconds; the log-probs; the
generations; and with --params the final full parameters (torch.save of a state dict, CPU float32).
The rows depend on --seed only, never on the number of ranks.
"""
import argparse
import json
import time

import torch

from .distributed import set_nvls_env


def synthetic_rows(n, vocab, max_len, seed):
    """n rows of random lengths: prompt and response ids (never id 0..3, the specials), a token mask with a few
    zeros, and an advantage of either sign."""
    g = torch.Generator().manual_seed(seed)

    def ids(k):
        return torch.randint(4, vocab, (k,), generator=g).tolist()

    rows = []
    for i in range(n):
        plen = int(torch.randint(2, max(3, max_len // 2), (1,), generator=g))
        rlen = int(torch.randint(1, max(2, max_len - plen), (1,), generator=g))
        mask = [0 if (i % 3 == 0 and j == 0) else 1 for j in range(rlen)]
        if i == n - 1:
            mask = [0] * rlen  # a row that leaves the loss entirely
        rows.append({"prompt_ids": ids(plen), "response_ids": ids(rlen), "token_mask": mask,
                     "advantage": float(torch.randn((1,), generator=g)) * 2.0})
    return rows


class _SftData:
    """The shape sft_step reads: examples[i] = (ids, learn mask)."""

    def __init__(self, rows):
        self.examples = [(r["prompt_ids"] + r["response_ids"], [0] * len(r["prompt_ids"]) + [1] * len(r["response_ids"]))
                         for r in rows]


def _sync(learner):
    if str(learner.device).startswith("cuda"):
        torch.cuda.synchronize()


def sft_steps(learner, rows, steps, micro):
    from .sft import sft_step
    data, out = _SftData(rows), []
    clip = float(learner.cfg["actor"]["optim"]["clip_grad"])
    for _ in range(steps):
        _sync(learner)
        t0 = time.time()
        learner.policy.model.train()
        loss, targets, _ = sft_step(learner, data, list(range(len(rows))),
                                    {"batching": "padding", "micro_batch_size_per_gpu": micro})
        params = list(learner.policy.model.parameters())
        learner.ranks.reduce_grads(params)
        norm = learner.ranks.clip_grad_norm(params, clip)
        learner.optimizer.step()
        learner.optimizer.zero_grad(set_to_none=True)
        _sync(learner)
        out.append({"loss": loss, "grad_norm": norm, "targets": targets, "seconds": time.time() - t0})
    return out


def ppo_steps(learner, rows, base_logprobs, steps):
    shifts = [0.0, 0.35, -0.4, 0.05, -1.2]  # unclipped, upper, lower, dual-clip territory
    for i, r in enumerate(rows):
        r["old_logprobs"] = [lp + shifts[(i + j) % len(shifts)] for j, lp in enumerate(base_logprobs[i]["logprobs"])]
    out = []
    for _ in range(steps):
        _sync(learner)
        t0 = time.time()
        m = learner._ppo_step(rows)
        _sync(learner)
        out.append({"loss": m.get("actor/loss"), "grad_norm": m.get("actor/grad_norm"), "tokens": m["actor/tokens"],
                    "clip_frac": m.get("actor/clip_frac"), "seconds": time.time() - t0})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kgym_train.parity")
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", default=None)
    ap.add_argument("--rows", type=int, default=12)
    ap.add_argument("--max-len", type=int, default=40)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--micro", type=int, default=2, help="SFT rows per micro-batch")
    ap.add_argument("--gen-tokens", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    set_nvls_env()
    from .learner import Learner, full_copy
    with open(a.config) as f:
        cfg = json.load(f)
    learner = Learner(cfg)
    learner.ensure_optimizer()
    rows = synthetic_rows(a.rows, len(learner.tokenizer), a.max_len, a.seed)
    result = {"world": learner.ranks.world, "sharding": learner.ranks.sharding, "device": str(learner.device),
              "torch": torch.__version__, "arch": learner.policy.arch,
              "parameters": learner.policy.num_parameters(), "rows": a.rows}
    # how many rows each rank took (proof that the work was split, not repeated)
    result["rows_per_rank"] = learner.ranks.gather(len(learner.ranks.share([1] * a.rows)))
    base, _ = learner._logprobs(rows, True)
    result["logprobs"] = base
    prompts = [r["prompt_ids"] for r in rows[:4]]
    result["generate"] = [list(o) for o in learner._generate(prompts, a.gen_tokens, 0.0, 1.0, -1, 0)]
    result["sft"] = sft_steps(learner, rows, a.steps, a.micro)
    result["rl"] = ppo_steps(learner, rows, base, a.steps)
    policy = full_copy(learner.ranks, learner.policy)[0] if learner.ranks.distributed else learner.policy
    if learner.ranks.is_main:
        with open(a.out, "w") as f:
            json.dump(result, f)
        if a.params:
            torch.save({k: v.detach().float().cpu() for k, v in policy.model.state_dict().items()}, a.params)
    learner.ranks.close()
    return 0


if __name__ == "__main__":
    from .distributed import exit_process
    exit_process(main())
