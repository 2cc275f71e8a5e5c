"""The learner: a policy, its tokenizer, its optimizer, and the three things kgym asks of it — sample from the live
weights, recompute log-probs of given tokens, take one PPO step. The SFT loop (sft.py) and the HTTP server
(server.py) are built on it.

Configuration: the resolved JSON kgym writes (python/kgym_train/configs/{sft,rl}.yaml hold every key and its
default). Sections read here: model, tokenizer, trainer (device, seed, mixed_precision, deterministic), and for RL
the actor section; SFT's optimizer is configured under `optim`.

Thread-safety: callers serialise GPU work with `Learner.lock` (the server does).

Several processes (torchrun, distributed.py): every rank builds the same Learner and shards it. Rank 0 takes the
requests; each of its collective operations (generate, logprobs, ppo_step, save, save_weights, load_weights)
first relays (name, arguments) to the other ranks, which sit in `follow()` and run the same operation. Each rank
generates / scores / learns on its share of the rows, and rank 0 returns the gathered result; only rank 0 writes
files.
"""
import math
import os
import sys
import threading
import time

import torch

from . import checkpoint, faults
from . import protocol as P
from .chat import ChatRenderer
from .distributed import Ranks
from .errors import UserError
from .losses import (aggregate, aggregate_norm, dual_clip_token_loss, micro_batches, response_logprobs,
                     risky_tokens)
from .decoder import view_of
from .models import Policy
from .rollout import Request, RolloutEngine, sample_seed
from .precision import MasterWeights, describe, grad_params, memory_plan, scheduled
from .tokenizer import load_tokenizer, train_tokenizer


def pick_device(name):
    if name in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"trainer.device={name} but no CUDA device is visible")
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
        raise UserError(f"optim.name: {name!r} is not adamw or sgd")
    betas = tuple(float(b) for b in optim.get("betas", (0.9, 0.999)))
    return torch.optim.AdamW(params, lr=float(optim["lr"]), betas=betas, weight_decay=float(optim["weight_decay"]),
                             eps=float(optim.get("eps", 1e-8)))


def make_scheduler(optimizer, warmup_steps, total_steps, kind):
    """Linear warmup over `warmup_steps`, then constant or a half-cosine down to 0 at `total_steps`."""
    if kind not in ("cosine", "constant"):
        raise UserError(f"lr_scheduler must be cosine or constant, got {kind!r}")

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
        self.ranks = Ranks.from_env(pick_device(trainer.get("device", "auto")), trainer.get("sharding", "auto"))
        self.device = self.ranks.device
        torch.manual_seed(int(trainer.get("seed", 1)))
        model_cfg = cfg["model"]
        path = model_path or model_cfg.get("path")
        self.model_source = path
        self.tokenizer = self._tokenizer(model_cfg, path)
        dtype = model_cfg.get("dtype", "fp32")
        if path:
            self.policy = Policy.load(path, self.device, dtype)
        else:
            self.policy = Policy.create(model_cfg["init"], len(self.tokenizer), self.tokenizer.pad_id(), self.device,
                                        dtype)
        if train and model_cfg.get("gradient_checkpointing"):
            self.policy.enable_checkpointing()
        self.ranks.wrap(self.policy.model)
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
        self.optim_name = "adamw"
        self.steps_taken = 0
        self.memory_report = None
        low = next(self.policy.model.parameters()).dtype in (torch.bfloat16, torch.float16)
        self.master_weights = (low and trainer.get("master_weights", "fp32") not in ("none", None, False)
                               and self.ranks.sharding != "fsdp2")
        self.engine = None
        self.leading = False  # serve: rank 0 relays its operations to the followers (kgym sft: all ranks loop)

    def _tokenizer(self, model_cfg, path):
        if model_cfg.get("tokenizer"):
            return load_tokenizer(model_cfg["tokenizer"])
        if path:
            return load_tokenizer(path)
        tok = self.cfg.get("tokenizer", {})
        if tok.get("train", "auto") in ("auto", True, "true"):
            out = os.path.join(self.cfg["trainer"]["out_dir"], "tokenizer")
            if self.ranks.is_main:
                made = train_tokenizer(tok.get("corpus", []), int(tok.get("vocab_size", 4096)), out)
            self.ranks.broadcast(None)  # the others read rank 0's files once written
            return made if self.ranks.is_main else load_tokenizer(out)
        raise UserError("no tokenizer: set model.tokenizer or model.path, or tokenizer.train")

    def max_context(self):
        m = self.policy.model
        conf = getattr(m, "config", None)
        if conf is not None and getattr(conf, "max_position_embeddings", None):
            return int(conf.max_position_embeddings)
        return int(m.cfg["max_position_embeddings"])

    def check_context(self, key, value, longest, room=0):
        """Refuses, before any step, sequences the model has no positions for: the longest is `longest` tokens, as
        the setting `key` (= `value`) left it; `room`: the tokens such a sequence needs beside `value`'s."""
        positions = self.max_context()
        if longest > positions:
            where = os.path.join(self.model_source, "config.json") if self.model_source else \
                "model.init.max_position_embeddings"
            raise UserError(f"{key} is {value} but the model has {positions} positions ({where}) and the longest "
                            f"sequence has {longest} tokens: set {key} to {positions - room} or less, or use a model "
                            "with longer context")

    # ---- several processes: rank 0 relays its operations ----------------------------------------------------------
    RELAYED = ("generate", "logprobs", "ppo_step", "save", "save_weights", "load_weights")

    def _relay(self, name, *args):
        if self.leading and self.ranks.distributed and self.ranks.is_main:
            self.ranks.broadcast((name, args))

    def follow(self):
        """Ranks > 0: run rank 0's relayed operations until it sends stop (`finish`)."""
        while True:
            name, args = self.ranks.broadcast(None)
            if name == "stop":
                return
            if name not in self.RELAYED:
                raise RuntimeError(f"rank {self.ranks.rank}: unknown relayed operation {name!r}")
            getattr(self, "_" + name)(*args)

    def finish(self):
        """Rank 0: releases the followers; every rank then leaves the process group."""
        self._relay("stop")
        self.ranks.close()

    # ---- rollout ---------------------------------------------------------------------------------------------------
    def generate(self, prompts, max_new_tokens, temperature, top_p, top_k, seed=None):
        self._relay("generate", prompts, max_new_tokens, temperature, top_p, top_k, seed)
        return self._generate(prompts, max_new_tokens, temperature, top_p, top_k, seed)

    def _generate(self, prompts, max_new_tokens, temperature, top_p, top_k, seed):
        """Per prompt (ids, logprobs, finish_reason). Row i of a seeded call samples with seed*1000003 + i, so a row's
        tokens do not depend on the batch or on how many ranks share it (the engine's noise is per sequence)."""
        mine = self.ranks.share([len(p) for p in prompts])
        if self.ranks.sharding == "fsdp2" or self.cfg.get("rollout", {}).get("local_engine", "kgym") == "generate":
            return self._generate_reference(prompts, mine, max_new_tokens, temperature, top_p, top_k, seed)
        reqs = [Request(prompts[i], max_new_tokens, temperature, top_p, top_k, sample_seed(seed, i)) for i in mine]
        self.rollout_engine().generate(reqs)
        outs = [(r.tokens, r.logprobs, r.finish_reason) for r in reqs]
        return _assemble(len(prompts), self.ranks.gather(list(zip(mine, outs))))

    def _generate_reference(self, prompts, mine, max_new_tokens, temperature, top_p, top_k, seed):
        """transformers' model.generate (the tiny model: its own loop): the path FSDP2 shards take, every forward
        a collective, and the reference the engine is tested against."""
        # A rank without prompts still steps with the others under fsdp2 (a dummy copy of the first).
        todo = [prompts[i] for i in mine] or ([prompts[0]] if self.ranks.sharding == "fsdp2" else [])
        outs = []
        if todo:
            rank_seed = None if seed is None else int(seed) * self.ranks.world + self.ranks.rank
            sync = self.ranks.all_done if self.ranks.sharding == "fsdp2" else None
            outs = self.policy.generate(todo, max_new_tokens, self.stop_ids, self.pad_id, temperature, top_p, top_k,
                                        rank_seed, sync)
        return _assemble(len(prompts), self.ranks.gather(list(zip(mine, outs))))

    def engine_plan(self):
        """(slots, max_len, KV tokens) of the rollout engine: sequences of up to rollout.prompt_length +
        rollout.response_length tokens (the model's context at most), rollout.engine_slots of them at once, a paged
        KV cache of as many tokens as rollout.kv_cache_gb holds (default: a quarter of the GPU's memory; 256 MiB on
        the CPU)."""
        ro = self.cfg.get("rollout", {})
        want = int(ro.get("prompt_length", 0) or 0) + int(ro.get("response_length", 0) or 0)
        max_len = min(self.max_context(), want or 16384)
        view = view_of(self.policy)
        if ro.get("kv_cache_gb"):
            budget = float(ro["kv_cache_gb"]) * 2**30
        elif self.device.startswith("cuda"):
            budget = 0.25 * torch.cuda.get_device_properties(self.device).total_memory
        else:
            budget = 256 * 2**20
        return int(ro.get("engine_slots", 256)), max_len, RolloutEngine.plan(view, budget)

    def rollout_engine(self):
        if self.engine is None:
            slots, max_len, kv_tokens = self.engine_plan()
            ro = self.cfg.get("rollout", {})
            self.engine = RolloutEngine(self.policy, slots, max_len, self.stop_ids, decode=self.tokenizer.decode,
                                        chunk=int(ro.get("engine_chunk", 16)),
                                        cuda_graphs=bool(ro.get("cuda_graphs", True)),
                                        vocab_limit=len(self.tokenizer), kv_tokens=kv_tokens)
            if self.ranks.is_main:
                kv = self.engine.cache_bytes()
                print(f"kgym_train: rollout engine {slots} slots x {max_len} tokens, paged KV cache "
                      f"{kv_tokens} tokens ({kv / 2**30:.2f} GiB, pages of {self.engine.page_size}), "
                      f"attention {self.engine.attend.backend}, projection tail {self.engine.project.backend}, sampling "
                      f"{self.engine.sampler.backend}, CUDA graphs "
                      f"{'on' if self.engine.graphs_on else 'off'}", file=sys.stderr, flush=True)
        return self.engine

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

    def _plan_tokens(self):
        """The most tokens one micro-batch holds: the PPO budget, or SFT's packing budget / rows x max_length."""
        data = self.cfg.get("data", {})
        if "actor" in self.cfg or not data:
            return self._budget()
        if data.get("batching") == "packing":
            return int(data["max_tokens_per_micro"])
        return int(data.get("micro_batch_size_per_gpu", 1)) * int(data.get("max_length", 1))

    def _budget(self):
        return int(self.cfg.get("actor", {}).get("ppo_max_token_len_per_gpu", 32768))

    def _my_micro_batches(self, lengths, keep=None):
        """This rank's micro-batches (index lists into `lengths`), padded with None to the busiest rank's count."""
        mine = self.ranks.share(lengths)
        if keep is not None:
            mine = [i for i in mine if keep(i)]
        mbs = [[mine[k] for k in mb] for mb in micro_batches([lengths[i] for i in mine], self._budget())]
        return self.ranks.padded(mbs)

    def _dummy_rows(self):
        return [[self.pad_id]], [[self.pad_id]]

    def logprobs(self, rows, with_entropy=False):
        """Per row, the float32 log-probs (and entropies) of its response tokens under the current weights."""
        self._relay("logprobs", rows, with_entropy)
        return self._logprobs(rows, with_entropy)

    @torch.no_grad()
    def _logprobs(self, rows, with_entropy):
        self.policy.model.eval()
        fitted = [self._fit(r[P.FIELD_PROMPT_IDS], r[P.FIELD_RESPONSE_IDS]) for r in rows]
        found = []
        lengths = [len(p) + len(r[P.FIELD_RESPONSE_IDS]) for (p, _), r in zip(fitted, rows)]
        for mb in self._my_micro_batches(lengths):
            if mb is None:
                response_logprobs(self.policy, *self._dummy_rows(), self.autocast)
                continue
            prompts = [fitted[i][0] for i in mb]
            responses = [rows[i][P.FIELD_RESPONSE_IDS] for i in mb]
            logp, ent, _ = response_logprobs(self.policy, prompts, responses, self.autocast, with_entropy)
            for k, i in enumerate(mb):
                n = len(responses[k])
                found.append((i, {P.FIELD_LOGPROBS: logp[k, :n].tolist(),
                                  P.FIELD_ENTROPY: ent[k, :n].tolist() if ent is not None else []}))
        return _assemble(len(rows), self.ranks.gather(found)), sum(1 for _, t in fitted if t)

    def build_optimizer(self, optim, warmup_steps, total_steps, kind):
        """The optimizer and LR schedule; a bf16 model's optimizer keeps float32 master weights (precision.py)
        unless trainer.master_weights is none (or the model is sharded by FSDP2, whose shards are the masters)."""
        params = self.policy.model.parameters()
        if self.master_weights:
            self.optimizer = MasterWeights(params, lambda masters: make_optimizer(masters, optim))
        else:
            self.optimizer = make_optimizer(params, optim)
        self.scheduler = make_scheduler(scheduled(self.optimizer), warmup_steps, total_steps, kind)
        self.optim_name = str(optim.get("name", "adamw")).lower()
        if self.ranks.is_main:
            where = "float32 masters in the optimizer" if self.master_weights else "the model's parameters"
            print(f"kgym_train: master weights: {where}; memory plan: {describe(self.memory_plan())}",
                  file=sys.stderr, flush=True)

    def ensure_optimizer(self, total_steps=0):
        if self.optimizer is None:
            optim = self.cfg["actor"]["optim"]
            self.build_optimizer(optim, int(optim.get("warmup_steps", 0)), total_steps, "constant")

    def apply_gradients(self, clip):
        """After the backward passes of a step: gradients summed over ranks, clipped to `clip` (global norm), one
        optimizer and scheduler step unless the norm is not finite; gradients cleared. Returns (norm, lr, stepped)."""
        params = grad_params(self.optimizer, self.policy.model.parameters())
        self.ranks.reduce_grads(params)
        grad_norm = self.ranks.clip_grad_norm(params, clip)
        if faults.hit("learner.grad") == "nonfinite":
            grad_norm = float("nan")  # as a step whose loss overflowed
        lr = self.optimizer.param_groups[0]["lr"]
        stepped = math.isfinite(grad_norm)
        if stepped:
            self.optimizer.step()
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.note_memory()
        return grad_norm, lr, stepped

    # ---- memory ------------------------------------------------------------------------------------------------
    def memory_plan(self):
        """Planned bytes by kind (precision.memory_plan) for this learner's largest micro-batch and KV cache."""
        tokens = self._plan_tokens()
        kv = self.engine.cache_bytes() if self.engine is not None else 0  # allocated with the engine's first use
        return memory_plan(self.policy.model, self.optim_name, self.master_weights, tokens, self.policy.checkpointing,
                           kv)

    def note_memory(self):
        """After the first optimizer steps on CUDA: the plan next to torch.cuda.max_memory_allocated, printed."""
        self.steps_taken += 1
        if self.steps_taken not in (1, 3) or not self.device.startswith("cuda") or not self.ranks.is_main:
            return
        plan = self.memory_plan()
        peak = torch.cuda.max_memory_allocated(self.device)
        self.memory_report = {"plan_bytes": plan["total"], "peak_bytes": peak, "plan": plan}
        print(f"kgym_train: memory after step {self.steps_taken}: peak {peak / 2**30:.2f} GiB allocated, plan "
              f"{plan['total'] / 2**30:.2f} GiB ({describe(plan)})", file=sys.stderr, flush=True)

    def ppo_step(self, rows):
        """One optimizer step of the dual-clip policy loss over `rows` (each: prompt_ids, response_ids, advantage,
        old_logprobs, token_mask). Returns the step's metrics."""
        for i, r in enumerate(rows):
            n = len(r[P.FIELD_RESPONSE_IDS])
            if len(r[P.FIELD_OLD_LOGPROBS]) != n or len(r[P.FIELD_TOKEN_MASK]) != n:
                raise ValueError(f"rows[{i}]: {P.FIELD_OLD_LOGPROBS} and {P.FIELD_TOKEN_MASK} need one entry per "
                                 f"response token ({n})")
        self._relay("ppo_step", rows)
        return self._ppo_step(rows)

    def _ppo_micro(self, rows, fitted, mb, mode, norm, sums):
        """Forward and backward of one micro-batch (None: a zero-weight dummy); adds to `sums`."""
        actor = self.cfg["actor"]
        if mb is None:
            logp, _, _ = response_logprobs(self.policy, *self._dummy_rows(), self.autocast)
            (logp.sum() * 0.0).backward()
            return
        logp, ent, valid = response_logprobs(self.policy, [fitted[i][0] for i in mb],
                                             [rows[i][P.FIELD_RESPONSE_IDS] for i in mb], self.autocast, with_entropy=True)
        old = torch.zeros_like(logp)
        mask = torch.zeros_like(valid)
        for k, i in enumerate(mb):
            n = len(rows[i][P.FIELD_RESPONSE_IDS])
            old[k, :n] = torch.tensor(rows[i][P.FIELD_OLD_LOGPROBS], dtype=torch.float32)
            mask[k, :n] = torch.tensor(rows[i][P.FIELD_TOKEN_MASK], dtype=torch.bool)
        adv = torch.tensor([float(rows[i][P.FIELD_ADVANTAGE]) for i in mb], dtype=torch.float32, device=logp.device)
        risky = risky_tokens(old, adv, actor.get("extreme_risk_prob_threshold"))
        sums["risky"] += float((risky & mask).sum())
        mask = mask & ~risky
        tl, st = dual_clip_token_loss(logp, old, adv, mask, float(actor["clip_ratio_low"]),
                                      float(actor["clip_ratio_high"]), float(actor["clip_ratio_c"]))
        loss = aggregate(tl, mask, mode, norm, float(actor["loss_scale_factor"]))
        (loss * self.ranks.loss_scale if self.ranks.distributed else loss).backward()
        sums["loss"] += float(loss.detach())
        for key in ("clip_upper", "clip_lower", "clip_dual", "kl"):
            sums[key] += float(st[key].sum())
        sums["token_entropy"] += float((ent * mask).sum())
        sums["tokens"] += float(mask.sum())

    def _ppo_step(self, rows):
        t0 = time.time()
        actor = self.cfg["actor"]
        self.ensure_optimizer()
        mode = actor.get("loss_agg_mode", "seq-mean-token-sum")
        norm = aggregate_norm([r[P.FIELD_TOKEN_MASK] for r in rows], mode)  # global: every rank sees every row
        self.policy.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        keys = ("loss", "clip_upper", "clip_lower", "clip_dual", "kl", "token_entropy", "risky", "tokens")
        sums = dict.fromkeys(keys, 0.0)
        fitted = [self._fit(r[P.FIELD_PROMPT_IDS], r[P.FIELD_RESPONSE_IDS]) for r in rows]
        lengths = [len(p) + len(r[P.FIELD_RESPONSE_IDS]) for (p, _), r in zip(fitted, rows)]
        micro = self._my_micro_batches(lengths, lambda i: any(rows[i][P.FIELD_TOKEN_MASK])) if norm > 0 else []
        for mb in micro:
            self._ppo_micro(rows, fitted, mb, mode, norm, sums)
        sums = dict(zip(keys, self.ranks.all_sum([sums[k] for k in keys])))
        tokens = int(sums["tokens"])
        metrics = {"actor/rows": len(rows), "actor/tokens": tokens, "actor/truncated_rows": sum(t for _, t in fitted),
                   "actor/risky_tokens_masked": sums["risky"]}
        if tokens == 0:
            self.optimizer.zero_grad(set_to_none=True)
            metrics["actor/skipped"] = 1
            return metrics
        grad_norm, lr, stepped = self.apply_gradients(float(actor["optim"]["clip_grad"]))
        if stepped:
            faults.die_if_hit("learner.train_step")  # the weights moved and nobody was told
            self.version += 1
        else:
            metrics["actor/grad_norm_nonfinite"] = 1
        metrics.update({
            "actor/loss": sums["loss"], "actor/grad_norm": grad_norm, "actor/lr": lr,
            "actor/entropy": sums["token_entropy"] / tokens, "actor/ppo_kl": sums["kl"] / tokens,
            "actor/clip_frac": (sums["clip_upper"] + sums["clip_lower"]) / tokens,
            "actor/clip_frac_upper": sums["clip_upper"] / tokens, "actor/clip_frac_lower": sums["clip_lower"] / tokens,
            "actor/clip_frac_dual": sums["clip_dual"] / tokens, "time/update_s": time.time() - t0,
            # weight handling inside the update: the float32 masters copied into the bf16 parameters (0 without)
            "time/weight_copy_s": getattr(self.optimizer, "copy_s", 0.0) if stepped else 0.0,
        })
        return metrics

    # ---- checkpoints -----------------------------------------------------------------------------------------------
    def save(self, path, state):
        self._relay("save", path, state)
        return self._save(path, state)

    def _save(self, path, state):
        state = dict(state, policy_version=self.version, arch=self.policy.arch)
        if not self.ranks.distributed:
            return checkpoint.save(path, self.policy, self.tokenizer, self.optimizer, self.scheduler, state)
        policy, optim_state = full_copy(self.ranks, self.policy, self.optimizer)  # collective
        if self.ranks.is_main:
            checkpoint.save(path, policy, self.tokenizer, self.optimizer, self.scheduler, state, optim_state)
        self.ranks.broadcast(None)  # the checkpoint is complete before any rank goes on
        return path

    def save_weights(self, path):
        """The policy and its tokenizer (a model folder) to `path`."""
        self._relay("save_weights", path)
        return self._save_weights(path)

    def _save_weights(self, path):
        policy = full_copy(self.ranks, self.policy)[0] if self.ranks.distributed else self.policy
        if self.ranks.is_main:
            policy.save(path)
            self.tokenizer.save(path)
        self.ranks.broadcast(None)
        return path

    def resume(self, path):
        """Optimizer, scheduler and RNG from checkpoint `path` (the weights were loaded from path/model)."""
        checkpoint.restore(path, self.optimizer, self.scheduler, self._load_optimizer_state)
        state = checkpoint.load_state(path)
        self.version = int(state.get("policy_version", 0))
        return state

    def _load_optimizer_state(self, blob):
        if self.ranks.sharding != "fsdp2":
            self.optimizer.load_state_dict(blob)
            return
        if not blob.get("state"):  # a stateless optimizer (SGD without momentum): only the hyperparameters
            for group, saved in zip(self.optimizer.param_groups, blob["param_groups"]):
                group.update({k: v for k, v in saved.items() if k != "params"})
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict
        set_optimizer_state_dict(self.policy.model, self.optimizer, blob, options=StateDictOptions(
            full_state_dict=True))

    def load_weights(self, path):
        self._relay("load_weights", path)
        self._load_weights(path)

    def _load_weights(self, path):
        if self.ranks.sharding == "fsdp2":
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
            other = Policy.load(path, "cpu", dtype="fp32")
            set_model_state_dict(self.policy.model, other.model.state_dict(),
                                 options=StateDictOptions(full_state_dict=True))
        else:
            self.policy.load_weights(path)
        self.version += 1


def _assemble(n, parts):
    """[(index, item), ...] from every rank -> a list of n items in index order."""
    out = [None] * n
    for part in parts:
        for i, item in part:
            out[i] = item
    return out


def full_copy(ranks, policy, optimizer=None):
    """(an unsharded CPU Policy on rank 0 — None elsewhere, the full optimizer state dict on rank 0 or None).
    Collective under fsdp2; under replicate every rank already holds it all."""
    if ranks.sharding != "fsdp2":
        return (policy if ranks.is_main else None), (optimizer.state_dict() if optimizer is not None else None)
    from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                         get_optimizer_state_dict)
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_model_state_dict(policy.model, options=opts)
    optim_state = get_optimizer_state_dict(policy.model, optimizer, options=opts) if optimizer is not None else None
    if not ranks.is_main:
        return None, None
    base = policy.model.kgym_base_class
    model = base(policy.model.cfg) if policy.arch == "tiny" else base(policy.model.config)
    missing, unexpected = model.to(next(iter(state.values())).dtype).load_state_dict(state, strict=False)
    if unexpected or any(k != "lm_head.weight" for k in missing):  # a tied head may be left out of the state
        raise RuntimeError(f"the gathered state does not fit {base.__name__}: missing {missing}, unexpected "
                           f"{unexpected}")
    return Policy(model, policy.arch, "cpu"), optim_state
