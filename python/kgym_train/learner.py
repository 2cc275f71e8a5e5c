"""The learner: a policy, its tokenizer, its optimizer, and the three things kgym asks of it — sample from the live
weights, recompute log-probs of given tokens, take one PPO step. The SFT loop (sft.py) and the HTTP server
(server.py) are built on it.

Configuration: the resolved JSON kgym writes (python/kgym_train/configs/{sft,rl}.yaml hold every key and its
default). Sections read here: model, tokenizer, trainer (device, seed, mixed_precision, deterministic), and for RL
the actor section; SFT's optimizer is configured under `optim`.

Thread-safety: callers serialise GPU work with `Learner.lock` (the server does).
"""
import math
import os
import threading
import time

import torch

from . import checkpoint
from .chat import ChatRenderer
from .losses import (aggregate, aggregate_norm, dual_clip_token_loss, micro_batches, response_logprobs,
                     risky_tokens)
from .models import Policy
from .tokenizer import load_tokenizer, train_tokenizer


def pick_device(name):
    if name in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"trainer.device={name} but no CUDA device is visible")
    return name


def make_optimizer(params, optim):
    """AdamW (the recipe's) or plain SGD (`name: sgd`, with `momentum`): SGD's step is proportional to the
    gradient, so the tokens a policy is already sure of (gradient near 0) stay where they are, where AdamW moves
    every weight by about lr whatever its gradient's scale."""
    name = str(optim.get("name", "adamw")).lower()
    if name == "sgd":
        return torch.optim.SGD(params, lr=float(optim["lr"]), momentum=float(optim.get("momentum", 0.0)),
                               weight_decay=float(optim["weight_decay"]))
    if name != "adamw":
        raise ValueError(f"optim.name: {name!r} is not adamw or sgd")
    betas = tuple(float(b) for b in optim.get("betas", (0.9, 0.999)))
    return torch.optim.AdamW(params, lr=float(optim["lr"]), betas=betas, weight_decay=float(optim["weight_decay"]),
                             eps=float(optim.get("eps", 1e-8)))


def make_scheduler(optimizer, warmup_steps, total_steps, kind):
    """Linear warmup over `warmup_steps`, then constant or a half-cosine down to 0 at `total_steps`."""
    if kind not in ("cosine", "constant"):
        raise ValueError(f"lr_scheduler must be cosine or constant, got {kind!r}")

    def factor(step):
        if warmup_steps > 0 and step < warmup_steps:
            return (step + 1) / warmup_steps
        if kind == "constant" or total_steps <= warmup_steps:
            return 1.0
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class Learner:
    def __init__(self, cfg, model_path=None, train=True):
        self.cfg = cfg
        trainer = cfg["trainer"]
        if trainer.get("deterministic"):
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
        self.device = pick_device(trainer.get("device", "auto"))
        torch.manual_seed(int(trainer.get("seed", 1)))
        model_cfg = cfg["model"]
        path = model_path or model_cfg.get("path")
        self.tokenizer = self._tokenizer(model_cfg, path)
        dtype = model_cfg.get("dtype", "fp32")
        if path:
            self.policy = Policy.load(path, self.device, dtype)
        else:
            self.policy = Policy.create(model_cfg["init"], len(self.tokenizer), self.tokenizer.pad_id(), self.device,
                                        dtype)
        if train and model_cfg.get("gradient_checkpointing") and self.policy.arch == "qwen3":
            self.policy.model.gradient_checkpointing_enable()
        self.renderer = ChatRenderer(self.tokenizer, model_cfg.get("chat_template", "chatml"))
        mp = trainer.get("mixed_precision", "none")
        param_dtype = next(self.policy.model.parameters()).dtype
        self.autocast = torch.bfloat16 if mp == "bf16" and param_dtype == torch.float32 else None
        self.pad_id = self.tokenizer.pad_id()
        self.stop_ids = self.tokenizer.stop_ids()
        self.version = 0
        self.lock = threading.Lock()
        self.optimizer = None
        self.scheduler = None

    def _tokenizer(self, model_cfg, path):
        if model_cfg.get("tokenizer"):
            return load_tokenizer(model_cfg["tokenizer"])
        if path:
            return load_tokenizer(path)
        tok = self.cfg.get("tokenizer", {})
        if tok.get("train", "auto") in ("auto", True, "true"):
            out = os.path.join(self.cfg["trainer"]["out_dir"], "tokenizer")
            return train_tokenizer(tok.get("corpus", []), int(tok.get("vocab_size", 4096)), out)
        raise ValueError("no tokenizer: set model.tokenizer or model.path, or tokenizer.train")

    def max_context(self):
        m = self.policy.model
        conf = getattr(m, "config", None)
        if conf is not None and getattr(conf, "max_position_embeddings", None):
            return int(conf.max_position_embeddings)
        return int(m.cfg["max_position_embeddings"])

    # ---- rollout ---------------------------------------------------------------------------------------------------
    def generate(self, prompts, max_new_tokens, temperature, top_p, top_k, seed=None):
        return self.policy.generate(prompts, max_new_tokens, self.stop_ids, self.pad_id, temperature, top_p, top_k,
                                    seed)

    # ---- log-probs and the PPO step --------------------------------------------------------------------------------
    def _fit(self, prompt, response):
        """Left-truncates a prompt so prompt + response fit actor.max_seq_length; returns (prompt, truncated)."""
        limit = int(self.cfg.get("actor", {}).get("max_seq_length", self.max_context()))
        limit = min(limit, self.max_context())
        if len(response) >= limit:
            raise ValueError(f"a response of {len(response)} tokens does not fit actor.max_seq_length {limit}")
        if len(prompt) + len(response) <= limit:
            return prompt, False
        return prompt[len(prompt) + len(response) - limit:], True

    def _budget(self):
        return int(self.cfg.get("actor", {}).get("ppo_max_token_len_per_gpu", 32768))

    @torch.no_grad()
    def logprobs(self, rows, with_entropy=False):
        """Per row, the float32 log-probs (and entropies) of its response tokens under the current weights."""
        self.policy.model.eval()
        fitted = [self._fit(r["prompt_ids"], r["response_ids"]) for r in rows]
        out = [None] * len(rows)
        lengths = [len(p) + len(r["response_ids"]) for (p, _), r in zip(fitted, rows)]
        for mb in micro_batches(lengths, self._budget()):
            prompts = [fitted[i][0] for i in mb]
            responses = [rows[i]["response_ids"] for i in mb]
            logp, ent, _ = response_logprobs(self.policy, prompts, responses, self.pad_id, self.autocast,
                                             with_entropy)
            for k, i in enumerate(mb):
                n = len(responses[k])
                out[i] = {"logprobs": logp[k, :n].tolist(),
                          "entropy": ent[k, :n].tolist() if ent is not None else []}
        return out, sum(1 for _, t in fitted if t)

    def ensure_optimizer(self, total_steps=0):
        if self.optimizer is None:
            optim = self.cfg["actor"]["optim"]
            self.optimizer = make_optimizer(self.policy.model.parameters(), optim)
            self.scheduler = make_scheduler(self.optimizer, int(optim.get("warmup_steps", 0)), total_steps,
                                            "constant")

    def ppo_step(self, rows):
        """One optimizer step of the dual-clip policy loss over `rows` (each: prompt_ids, response_ids, advantage,
        old_logprobs, token_mask). Returns the step's metrics."""
        t0 = time.time()
        actor = self.cfg["actor"]
        self.ensure_optimizer()
        mode = actor.get("loss_agg_mode", "seq-mean-token-sum")
        for i, r in enumerate(rows):
            n = len(r["response_ids"])
            if len(r["old_logprobs"]) != n or len(r["token_mask"]) != n:
                raise ValueError(f"rows[{i}]: old_logprobs and token_mask need one entry per response token ({n})")
        norm = aggregate_norm([r["token_mask"] for r in rows], mode)
        self.policy.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        sums = {"loss": 0.0, "clip_upper": 0.0, "clip_lower": 0.0, "clip_dual": 0.0, "kl": 0.0, "entropy": 0.0,
                "risky": 0.0}
        tokens = 0
        fitted = [self._fit(r["prompt_ids"], r["response_ids"]) for r in rows]
        lengths = [len(p) + len(r["response_ids"]) for (p, _), r in zip(fitted, rows)]
        for mb in micro_batches(lengths, self._budget()) if norm > 0 else []:
            if not any(any(rows[i]["token_mask"]) for i in mb):
                continue
            logp, ent, valid = response_logprobs(self.policy, [fitted[i][0] for i in mb],
                                                 [rows[i]["response_ids"] for i in mb], self.pad_id, self.autocast,
                                                 with_entropy=True)
            old = torch.zeros_like(logp)
            mask = torch.zeros_like(valid)
            for k, i in enumerate(mb):
                n = len(rows[i]["response_ids"])
                old[k, :n] = torch.tensor(rows[i]["old_logprobs"], dtype=torch.float32)
                mask[k, :n] = torch.tensor(rows[i]["token_mask"], dtype=torch.bool)
            adv = torch.tensor([float(rows[i]["advantage"]) for i in mb], dtype=torch.float32, device=logp.device)
            risky = risky_tokens(old, adv, actor.get("extreme_risk_prob_threshold"))
            sums["risky"] += float((risky & mask).sum())
            mask = mask & ~risky
            tl, st = dual_clip_token_loss(logp, old, adv, mask, float(actor["clip_ratio_low"]),
                                          float(actor["clip_ratio_high"]), float(actor["clip_ratio_c"]))
            loss = aggregate(tl, mask, mode, norm, float(actor["loss_scale_factor"]))
            loss.backward()
            sums["loss"] += float(loss.detach())
            for key in ("clip_upper", "clip_lower", "clip_dual", "kl"):
                sums[key] += float(st[key].sum())
            sums["entropy"] += float((ent * mask).sum())
            tokens += int(mask.sum())
        metrics = {"actor/rows": len(rows), "actor/tokens": tokens, "actor/truncated_rows": sum(t for _, t in fitted),
                   "actor/risky_tokens_masked": sums["risky"]}
        if tokens == 0:
            metrics["actor/skipped"] = 1
            return metrics
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(),
                                                         float(actor["optim"]["clip_grad"])))
        if math.isfinite(grad_norm):
            self.optimizer.step()
            self.scheduler.step()
            self.version += 1
        else:
            metrics["actor/grad_norm_nonfinite"] = 1
        self.optimizer.zero_grad(set_to_none=True)
        metrics.update({
            "actor/loss": sums["loss"], "actor/grad_norm": grad_norm, "actor/lr": self.optimizer.param_groups[0]["lr"],
            "actor/entropy": sums["entropy"] / tokens, "actor/ppo_kl": sums["kl"] / tokens,
            "actor/clip_frac": (sums["clip_upper"] + sums["clip_lower"]) / tokens,
            "actor/clip_frac_upper": sums["clip_upper"] / tokens, "actor/clip_frac_lower": sums["clip_lower"] / tokens,
            "actor/clip_frac_dual": sums["clip_dual"] / tokens, "time/update_s": time.time() - t0,
        })
        return metrics

    # ---- checkpoints -----------------------------------------------------------------------------------------------
    def save(self, path, state):
        state = dict(state, policy_version=self.version, arch=self.policy.arch)
        return checkpoint.save(path, self.policy, self.tokenizer, self.optimizer, self.scheduler, state)

    def resume(self, path):
        """Optimizer, scheduler and RNG from checkpoint `path` (the weights were loaded from path/model)."""
        checkpoint.restore(path, self.optimizer, self.scheduler)
        state = checkpoint.load_state(path)
        self.version = int(state.get("policy_version", 0))
        return state

    def load_weights(self, path):
        self.policy.load_weights(path)
        self.version += 1
