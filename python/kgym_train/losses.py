"""The learner's token math: response log-probs of (prompt, response) rows, the PPO dual-clip policy loss with
Dr.Kernel's aggregation, and the masked cross-entropy of SFT.

Rows are lists of token ids; a micro-batch is right-padded, so a row's tokens keep positions 0.. as in
generation. The response log-probs of row i are those of the logits at positions len(prompt)-1 .. len(prompt)+
len(response)-2, computed in float32 whatever the autocast dtype (MRS compares them with the rollout's).

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

AGG_MODES = ("seq-mean-token-sum", "seq-mean-token-mean", "token-mean")


def micro_batches(lengths, token_budget, max_rows=0):
    """Index lists covering range(len(lengths)): rows sorted by length, each micro-batch as many as fit in
    `token_budget` padded tokens (rows x longest); a row longer than the budget goes alone."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    out, cur, longest = [], [], 0
    for i in order:
        width = max(longest, lengths[i])
        if cur and (width * (len(cur) + 1) > token_budget or (max_rows and len(cur) >= max_rows)):
            out.append(cur)
            cur, width = [], lengths[i]
        cur.append(i)
        longest = width
    if cur:
        out.append(cur)
    return out


def pad_right(seqs, pad_id, device):
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids.to(device), mask.to(device)


def response_logprobs(policy, prompts, responses, pad_id, autocast_dtype=None, with_entropy=False):
    """(logp, entropy, valid) of shape (B, R): float32 log-probs of each response token under `policy`, its entropy
    (None unless asked; computed without grad) and the response mask. Gradients flow through logp."""
    device = policy.device
    ids, attn = pad_right([p + r for p, r in zip(prompts, responses)], pad_id, device)
    rmax = max(1, max(len(r) for r in responses))
    pos = torch.zeros((len(prompts), rmax), dtype=torch.long)
    tgt = torch.full((len(prompts), rmax), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), rmax), dtype=torch.bool)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        if not p:
            raise ValueError("a row needs at least one prompt token")
        pos[i, :len(r)] = torch.arange(len(p) - 1, len(p) - 1 + len(r))
        tgt[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        valid[i, :len(r)] = True
    pos, tgt, valid = pos.to(device), tgt.to(device), valid.to(device)
    with _autocast(device, autocast_dtype):
        logits = policy.logits(ids, attn)
    picked = logits.gather(1, pos[:, :, None].expand(-1, -1, logits.shape[-1])).float()
    logsm = torch.log_softmax(picked, dim=-1)
    logp = logsm.gather(2, tgt[:, :, None])[:, :, 0]
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logsm.exp() * logsm).sum(-1)
    return logp * valid, entropy, valid


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


def sft_token_losses(policy, seqs, masks, pad_id, autocast_dtype=None):
    """(sum of the masked next-token cross-entropies, number of masked targets) of one micro-batch."""
    ids, attn = pad_right(seqs, pad_id, policy.device)
    learn = torch.zeros(ids.shape, dtype=torch.bool)
    for i, m in enumerate(masks):
        learn[i, :len(m)] = torch.tensor(m, dtype=torch.bool)
    learn = learn.to(policy.device)[:, 1:]  # target j+1 is predicted at position j
    with _autocast(policy.device, autocast_dtype):
        logits = policy.logits(ids, attn)
    logits = logits[:, :-1].float()
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1),
                                           reduction="none").view(learn.shape)
    return (ce * learn).sum(), int(learn.sum())


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
