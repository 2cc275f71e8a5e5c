"""The learner's token math: response log-probs of (prompt, response) rows, the PPO dual-clip policy loss with
Dr.Kernel's aggregation, and the masked cross-entropy of SFT.

Rows are lists of token ids; a micro-batch is one packed row (packing.py), so each row's tokens keep positions
0.. as in generation. The response log-probs of row i are those of the logits at positions len(prompt)-1 ..
len(prompt)+len(response)-2, computed in float32 whatever the autocast dtype (MRS compares them with the
rollout's).

Policy loss (research/drkernel.md §2.5; the numpy reference is kgym_rl.dual_clip_policy_loss):
  ratio = exp(logp - old_logp); L = max(-A·ratio, -A·clip(ratio, 1-clip_low, 1+clip_high));
  for A < 0, L = min(L, -A·clip_ratio_c).
Aggregation over a whole mini-batch that may span several micro-batches (the normaliser is global, so the sum
of the micro-batch losses is the mini-batch loss exactly):
  seq-mean-token-sum   sum over each row's valid tokens, mean over rows with >= 1 valid token, / loss_scale_factor
  seq-mean-token-mean  mean over each row's valid tokens, mean over those rows
  token-mean           mean over all valid tokens
"""
import math

import torch

from .packing import Pack, token_logprobs

AGG_MODES = ("seq-mean-token-sum", "seq-mean-token-mean", "token-mean")


def micro_batches(lengths, token_budget, max_rows=0):
    """Index lists covering range(len(lengths)): rows sorted by length, each micro-batch as many as fit in
    `token_budget` tokens laid end to end (a packed row, packing.py: its cost is the sum of its lengths, not rows x
    longest); a row longer than the budget goes alone."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    out, cur, used = [], [], 0
    for i in order:
        if cur and (used + lengths[i] > token_budget or (max_rows and len(cur) >= max_rows)):
            out.append(cur)
            cur, used = [], 0
        cur.append(i)
        used += lengths[i]
    if cur:
        out.append(cur)
    return out


def response_logprobs(policy, prompts, responses, autocast_dtype=None, with_entropy=False):
    """(logp, entropy, valid) of shape (B, R): float32 log-probs of each response token under `policy`, its entropy
    (None unless asked; computed without grad) and the response mask. Gradients flow through logp. The rows run as
    one packed forward (packing.py); the response token j of row i is predicted at position len(prompt_i) - 1 + j."""
    for p in prompts:
        if not p:
            raise ValueError("a row needs at least one prompt token")
    pack = Pack([p + r for p, r in zip(prompts, responses)], policy.device)
    rows, cols, select, targets = [], [], [], []
    for i, (p, r) in enumerate(zip(prompts, responses)):
        for j, tok in enumerate(r):
            rows.append(i)
            cols.append(j)
            select.append(pack.at(i, len(p) - 1 + j))
            targets.append(tok)
    with _autocast(policy.device, autocast_dtype):
        lp, ent = token_logprobs(policy, pack, select, targets, with_entropy)
    shape = (len(prompts), max(1, max(len(r) for r in responses)))
    index = (torch.tensor(rows, dtype=torch.long, device=lp.device), torch.tensor(cols, dtype=torch.long,
                                                                                   device=lp.device))
    logp = torch.zeros(shape, dtype=torch.float32, device=lp.device).index_put(index, lp)
    valid = torch.zeros(shape, dtype=torch.bool, device=lp.device).index_put(index, torch.ones_like(lp, dtype=torch.bool))
    entropy = torch.zeros(shape, dtype=torch.float32, device=lp.device).index_put(index, ent) if with_entropy else None
    return logp, entropy, valid


def risky_tokens(old_logp, advantages, threshold):
    """Dr.Kernel's extreme_risk_prob_threshold: tokens the old policy gave probability < threshold in rows with a
    negative advantage. Pushing such a token down further moves the model most for least reason (a sampled
    low-probability token has a gradient of about |A| on its logit), which can wreck what the policy does well;
    the option leaves them out of the loss. threshold <= 0: none."""
    if threshold is None or threshold <= 0:
        return torch.zeros_like(old_logp, dtype=torch.bool)
    return (old_logp < math.log(threshold)) & (advantages[:, None] < 0)


def dual_clip_token_loss(logp, old_logp, advantages, mask, clip_low, clip_high, clip_c):
    """Per-token loss (B, R) and the clip indicators; advantages has one value per row."""
    if clip_c <= 1.0:
        raise ValueError("clip_ratio_c must be > 1")
    adv = advantages[:, None].expand_as(logp)
    ratio = torch.exp(logp - old_logp)
    l1 = -adv * ratio
    l2 = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    clipped = torch.maximum(l1, l2)
    l3 = -adv * clip_c
    loss = torch.where(adv < 0, torch.minimum(clipped, l3), clipped)
    m = mask.float()
    dual = (adv < 0) & (l3 < clipped)  # the same clip indicators as src/rl/policy_loss.cc
    stats = {
        "clip_upper": ((ratio > 1.0 + clip_high) & ~dual).float() * m,
        "clip_lower": ((ratio < 1.0 - clip_low) | dual).float() * m,
        "clip_dual": dual.float() * m,
        "kl": (old_logp - logp).detach() * m,
    }
    return loss * m, stats


def aggregate(token_loss, mask, mode, norm, loss_scale_factor):
    """The micro-batch's share of the mini-batch loss. `norm` is the mini-batch's normaliser: rows with >= 1
    valid token for the seq-mean modes, valid tokens for token-mean."""
    if mode == "seq-mean-token-sum":
        return token_loss.sum() / (max(norm, 1) * loss_scale_factor)
    if mode == "seq-mean-token-mean":
        per_row = token_loss.sum(-1) / mask.float().sum(-1).clamp(min=1)
        return per_row.sum() / max(norm, 1)
    if mode == "token-mean":
        return token_loss.sum() / max(norm, 1)
    raise ValueError(f"actor.loss_agg_mode must be one of {AGG_MODES}, got {mode!r}")


def aggregate_norm(token_masks, mode):
    """The mini-batch normaliser of `aggregate` from the rows' token masks (lists of 0/1)."""
    if mode == "token-mean":
        return sum(sum(m) for m in token_masks)
    return sum(1 for m in token_masks if any(m))


def sft_token_losses(policy, seqs, masks, autocast_dtype=None):
    """(sum of the masked next-token cross-entropies, number of masked targets) of one micro-batch, run as one
    packed forward: target j of a sequence (mask[j] = 1, j >= 1) is predicted at position j - 1."""
    pack = Pack(seqs, policy.device)
    select, targets = [], []
    for i, (seq, m) in enumerate(zip(seqs, masks)):
        for j in range(1, len(seq)):
            if j < len(m) and m[j]:
                select.append(pack.at(i, j - 1))
                targets.append(seq[j])
    with _autocast(policy.device, autocast_dtype):
        lp, _ = token_logprobs(policy, pack, select, targets)
    return -lp.sum(), len(targets)


class _autocast:
    """torch.autocast for a dtype, or nothing (None, or a dtype the device's autocast lacks)."""

    def __init__(self, device, dtype):
        self.ctx = None
        if dtype is not None:
            self.ctx = torch.autocast(device_type=torch.device(device).type, dtype=dtype)

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            return self.ctx.__exit__(*exc)
        return False
