"""Checkpoints of the learner: everything an exact resume needs.

  <dir>/model/              the policy (config.json + model.safetensors) and its tokenizer: a Hugging Face model
                            folder for qwen3, loadable on its own (the next stage's model.path)
  <dir>/optimizer.pt        optimizer and LR-scheduler state dicts
  <dir>/rng.pt              Python, torch (CPU and every CUDA device) generator states
  <dir>/trainer_state.json  step, data position, policy version and whatever the caller adds

A checkpoint is written into <dir>.tmp and renamed, so a folder named step_N is always complete.
"""
import json
import os
import random
import re
import shutil

import torch

from .errors import UserError

STATE_FILE = "trainer_state.json"


def save(path, policy, tokenizer, optimizer, scheduler, state, optimizer_state=None):
    """`optimizer_state`: the optimizer's full state when `optimizer` holds only a shard (FSDP2, learner.py)."""
    tmp = path.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    policy.save(os.path.join(tmp, "model"))
    tokenizer.save(os.path.join(tmp, "model"))
    if optimizer is not None:
        full = optimizer_state if optimizer_state is not None else optimizer.state_dict()
        torch.save({"optimizer": full,
                    "scheduler": scheduler.state_dict() if scheduler is not None else None},
                   os.path.join(tmp, "optimizer.pt"))
    rng = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    torch.save(rng, os.path.join(tmp, "rng.pt"))
    with open(os.path.join(tmp, STATE_FILE), "w") as f:
        json.dump(state, f, indent=2)
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    return path


def load_state(path):
    with open(os.path.join(path, STATE_FILE)) as f:
        return json.load(f)


def restore(path, optimizer, scheduler, load_optimizer=None):
    """Optimizer, scheduler and RNG state from checkpoint `path` (the model is loaded by the caller).
    `load_optimizer(state)` replaces optimizer.load_state_dict (a sharded optimizer loads a full state its way)."""
    opt_file = os.path.join(path, "optimizer.pt")
    if optimizer is not None:
        if not os.path.exists(opt_file):
            raise UserError(f"{path} has no optimizer.pt: not a training checkpoint")
        blob = torch.load(opt_file, map_location="cpu")
        (load_optimizer or optimizer.load_state_dict)(blob["optimizer"])
        if scheduler is not None and blob.get("scheduler") is not None:
            scheduler.load_state_dict(blob["scheduler"])
    rng = torch.load(os.path.join(path, "rng.pt"), map_location="cpu")
    random.setstate(rng["python"])
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])


def step_dirs(out_dir):
    """(step, path) of the complete checkpoints under out_dir/checkpoints, oldest first."""
    root = os.path.join(out_dir, "checkpoints")
    found = []
    if os.path.isdir(root):
        for name in os.listdir(root):
            m = re.fullmatch(r"step_(\d+)", name)
            if m and os.path.exists(os.path.join(root, name, STATE_FILE)):
                found.append((int(m.group(1)), os.path.join(root, name)))
    return sorted(found)


def resolve_resume(resume, out_dir):
    """The checkpoint folder to resume from: trainer.resume = auto (newest under out_dir) | disable | a folder."""
    if resume in (None, "disable", False):
        return None
    if resume == "auto":
        found = step_dirs(out_dir)
        return found[-1][1] if found else None
    if not os.path.exists(os.path.join(resume, STATE_FILE)):
        raise UserError(f"trainer.resume={resume!r} is not a checkpoint folder (no {STATE_FILE})")
    return resume


def prune(out_dir, keep):
    """Deletes all but the newest `keep` checkpoints (keep None or <= 0: keep all)."""
    if not keep or keep <= 0:
        return
    for _, path in step_dirs(out_dir)[:-keep]:
        shutil.rmtree(path, ignore_errors=True)
