"""The SFT cold start: masked cross-entropy over the assistant turns of multi-turn conversations.

One optimizer step per global batch of data.train_batch_size conversations, split into micro-batches (padding:
micro_batch_size_per_gpu each; packing: filled up to max_tokens_per_micro tokens). The loss is the mean over the
batch's assistant tokens (every micro-batch is divided by the batch's token count, so gradient accumulation is
exact). AdamW, warmup + cosine (or constant), gradient clipping, optional bf16 autocast. Checkpoints every
trainer.save_freq steps and at the end (checkpoint.py); trainer.resume continues bit-identically. The final model
(weights + tokenizer) is also written to out_dir/final, the folder the RL stage starts from.

trainer.time_budget_s (seconds from the start of run_sft; null or <= 0: none): after a step, when the time spent
plus the longest step so far would pass the budget, a checkpoint is saved and the run stops without out_dir/final
(the same command again continues from that checkpoint). At least one step is done per run.
"""
import math
import os
import shutil
import time

import torch

from . import checkpoint
from .data import SftData, load_conversations
from .errors import UserError
from .learner import Learner
from .losses import micro_batches, sft_token_losses
from .metrics import MetricsLog


def _micro(data, batch, cfg):
    if cfg["batching"] == "padding":
        size = max(1, int(cfg["micro_batch_size_per_gpu"]))
        return [batch[i:i + size] for i in range(0, len(batch), size)]
    if cfg["batching"] == "packing":
        lengths = [len(data.examples[i][0]) for i in batch]
        return [[batch[k] for k in mb] for mb in micro_batches(lengths, int(cfg["max_tokens_per_micro"]))]
    raise UserError(f"data.batching must be padding or packing, got {cfg['batching']!r}")


def _my_micro(learner, data, batch, data_cfg):
    """This rank's share of `batch` in micro-batches, padded with None to the busiest rank's count (one rank: the
    whole batch). The normaliser stays the whole batch's, so the ranks' losses sum to the one-rank loss."""
    ranks = learner.ranks
    mine = ranks.share([len(data.examples[i][0]) for i in batch])
    return ranks.padded(_micro(data, [batch[k] for k in mine], data_cfg))


def _dummy(learner):
    return sft_token_losses(learner.policy, [[learner.pad_id] * 2], [[0, 1]], learner.autocast)[0]


def sft_step(learner, data, batch, data_cfg):
    """Forward/backward of one global batch; returns (mean loss, assistant tokens, all tokens)."""
    targets = sum(sum(data.examples[i][1][1:]) for i in batch)
    scale = learner.ranks.loss_scale
    total = 0.0
    for mb in _my_micro(learner, data, batch, data_cfg):
        if mb is None:
            (_dummy(learner) * 0.0).backward()
            continue
        seqs = [data.examples[i][0] for i in mb]
        masks = [data.examples[i][1] for i in mb]
        loss_sum, _ = sft_token_losses(learner.policy, seqs, masks, learner.autocast)
        (loss_sum / targets * scale if learner.ranks.distributed else loss_sum / targets).backward()
        total += float(loss_sum.detach())
    total = learner.ranks.all_sum([total])[0]
    return total / targets, targets, sum(len(data.examples[i][0]) for i in batch)


@torch.no_grad()
def validation_loss(learner, data, data_cfg):
    learner.policy.model.eval()
    loss, targets = 0.0, 0
    for mb in _my_micro(learner, data, list(range(len(data.examples))), data_cfg):
        if mb is None:
            _dummy(learner)
            continue
        s, n = sft_token_losses(learner.policy, [data.examples[i][0] for i in mb], [data.examples[i][1] for i in mb],
                                learner.autocast)
        loss, targets = loss + float(s), targets + n
    loss, targets = learner.ranks.all_sum([loss, targets])
    learner.policy.model.train()
    return loss / max(targets, 1)


def out_of_time(started, longest, budget):
    """Whether another step of `longest` seconds would end past `budget` seconds after `started`."""
    return bool(budget) and budget > 0 and time.time() - started + longest > budget


def run_sft(cfg):
    started = time.time()
    trainer, data_cfg, optim = cfg["trainer"], cfg["data"], cfg["optim"]
    out_dir = trainer["out_dir"]
    os.makedirs(out_dir, exist_ok=True)
    resume = checkpoint.resolve_resume(trainer.get("resume", "auto"), out_dir)
    learner = Learner(cfg, model_path=os.path.join(resume, "model") if resume else None)
    main = learner.ranks.is_main  # under torchrun every rank runs this loop on its share; rank 0 logs and saves
    log = MetricsLog(out_dir) if main else None
    conversations = load_conversations(data_cfg["train_files"], data_cfg["messages_key"])
    data = SftData(conversations, learner.renderer, int(data_cfg["max_length"]), data_cfg["truncation"],
                   int(data_cfg["train_batch_size"]), int(trainer["seed"]), bool(data_cfg.get("shuffle", True)))
    val = None
    if data_cfg.get("val_files"):
        val = SftData(load_conversations(data_cfg["val_files"], data_cfg["messages_key"]), learner.renderer,
                      int(data_cfg["max_length"]), data_cfg["truncation"], 1, 0, False)
    longest = max(len(ids) for ids, _ in data.examples + (val.examples if val is not None else []))
    learner.check_context("data.max_length", int(data_cfg["max_length"]), longest)
    per_epoch = data.steps_per_epoch()
    total = int(trainer.get("total_training_steps") or per_epoch * int(trainer["total_epochs"]))
    learner.build_optimizer(optim, int(math.ceil(float(optim["warmup_steps_ratio"]) * total)), total,
                            optim["lr_scheduler"])
    step = 0
    if resume:
        step = int(learner.resume(resume)["step"])
        print(f"kgym_train sft: resumed from {resume} at step {step}", flush=True)
    if main:
        print(f"kgym_train sft: {len(data.examples)} conversations ({data.tokens()} tokens, {data.truncated} "
              f"truncated, {data.dropped} dropped), {per_epoch} steps/epoch, {total} steps, "
              f"{learner.policy.num_parameters()} parameters ({learner.policy.arch}) on {learner.device} x "
              f"{learner.ranks.world} rank(s) ({learner.ranks.sharding})", flush=True)
    learner.policy.model.train()
    budget, longest = trainer.get("time_budget_s"), 0.0
    while step < total:
        t0 = time.time()
        epoch, index = divmod(step, per_epoch)
        loss, targets, tokens = sft_step(learner, data, data.batch(epoch, index), data_cfg)
        grad_norm, lr, _ = learner.apply_gradients(float(optim["clip_grad"]))
        step += 1
        learner.version = step
        if learner.device.startswith("cuda"):
            torch.cuda.synchronize()
        dt = time.time() - t0
        rec = {"train/loss": loss, "train/lr": lr, "train/grad_norm": grad_norm, "train/epoch": epoch,
               "train/assistant_tokens": targets, "train/tokens_per_s": tokens / dt, "time/step_s": dt}
        if val is not None and ((int(trainer["test_freq"]) > 0 and step % int(trainer["test_freq"]) == 0)
                                or step == total):
            rec["val/loss"] = validation_loss(learner, val, data_cfg)
        if main and (step % max(1, int(trainer.get("log_freq", 1))) == 0 or step == total):
            log.write(step, rec)
        longest = max(longest, dt)
        stop = step < total and out_of_time(started, longest, budget)
        stop = learner.ranks.all_sum([float(stop)], op="max")[0] > 0  # every rank stops at the same step
        if stop or step == total or (int(trainer["save_freq"]) > 0 and step % int(trainer["save_freq"]) == 0):
            learner.save(os.path.join(out_dir, "checkpoints", f"step_{step}"), {"step": step, "total": total})
            if main:
                checkpoint.prune(out_dir, trainer.get("max_ckpt_to_keep"))
        if stop:
            if main:
                shutil.rmtree(os.path.join(out_dir, "final"), ignore_errors=True)  # an earlier run's is stale
                log.close()
                print(f"kgym_train sft: stopped at step {step} of {total}: the next step would pass "
                      f"trainer.time_budget_s={budget}; the same command again continues", flush=True)
            learner.ranks.close()
            return None
    final = os.path.join(out_dir, "final")
    learner.save_weights(final)
    if main:
        log.close()
        print(f"kgym_train sft: done, final model in {final}", flush=True)
    learner.ranks.close()
    return final
