"""Token sampling on the device, one row per sequence, with per-row parameters and per-row reproducible noise.

`sample(logits, temp, top_k, top_p, seed, step, filtered)` -> (tokens, logprobs), all tensors of one row per
sequence: temperature 0 is greedy; top_k <= 0 and top_p >= 1 switch those filters off (`filtered` False skips the
sort entirely when no row filters). `logprobs` are those of the chosen tokens under the unmodified policy
(temperature 1, whole vocabulary), which is what the learner recomputes and MRS compares.

The draw is an exponential race (Gumbel-max): token = argmax(logit / T + g), g = -log(-log u), and u comes from a
counter-based hash of (seed, step, token id) rather than a generator's state, so a sequence's sample depends only on
its own seed and position: not on which other sequences share its batch, on the slot it runs in, or on when it was
admitted. The arithmetic is int32 with wrap-around (low 32 bits exact); shifts mask off sign extension.
Everything here is tensor code with no host synchronisation, so a decode step can be captured in a CUDA graph.
"""
import torch

_M1 = 0x7FEB352D
_M2 = 0x2C1B3C6D
_GOLDEN = 0x1E3779B9


def _shr(h, s):
    return (h >> s) & ((1 << (32 - s)) - 1)


def mix32(h):
    """A 32-bit finaliser on int32 tensors (wrap-around multiplies)."""
    h = h ^ _shr(h, 16)
    h = h * _M1
    h = h ^ _shr(h, 15)
    h = h * _M2
    return h ^ _shr(h, 16)


def vocab_keys(vocab, device):
    """The per-token-id half of the hash, computed once per engine."""
    return mix32(torch.arange(vocab, dtype=torch.int32, device=device) * _GOLDEN + 1)


def row_keys(seed, step):
    """(B,) int32 from a 63-bit seed (B,) int64 and the step (B,) (tokens generated so far)."""
    lo = (seed & 0xFFFFFFFF).to(torch.int32)
    hi = ((seed >> 32) & 0x7FFFFFFF).to(torch.int32)
    return mix32(mix32(lo ^ mix32(hi + 0x51ED27)) ^ (step.to(torch.int32) * _GOLDEN))


def gumbel(seed, step, vkeys):
    """(B, V) float32 Gumbel noise, a pure function of (seed, step, token id)."""
    h = mix32(row_keys(seed, step)[:, None] ^ vkeys[None, :])
    u = (_shr(h, 8).float() + 0.5) * (1.0 / (1 << 24))  # (0, 1), 24 bits
    return -torch.log(-torch.log(u))


def sample(logits, temp, top_k, top_p, seed, step, vkeys, filtered):
    """See the module's docstring. logits (B, V) float32; temp/top_p (B,) float32; top_k/seed/step (B,) int64.
    Only the first len(vkeys) token ids are drawn (a vocabulary padded past the tokenizer's is never sampled),
    while the log-probs stay those of the whole distribution, as the learner computes them."""
    logp_all = torch.log_softmax(logits, dim=-1)
    logits = logits[:, :vkeys.shape[0]]
    greedy = logits.argmax(-1)
    scores = logits / temp.clamp(min=1e-5)[:, None]
    noise = gumbel(seed, step, vkeys)
    if filtered:
        sorted_scores, order = scores.sort(dim=-1, descending=True)
        rank = torch.arange(scores.shape[-1], device=scores.device)[None, :]
        keep = (rank < top_k[:, None]) | (top_k[:, None] <= 0)
        sorted_scores = sorted_scores.masked_fill(~keep, float("-inf"))
        probs = sorted_scores.softmax(-1)
        keep = keep & ((probs.cumsum(-1) - probs < top_p[:, None]) | (rank == 0))
        race = sorted_scores.masked_fill(~keep, float("-inf")) + noise.gather(1, order)
        sampled = order.gather(1, race.argmax(-1, keepdim=True))[:, 0]
    else:
        sampled = (scores + noise).argmax(-1)
    tokens = torch.where(temp > 0, sampled, greedy)
    return tokens, logp_all.gather(1, tokens[:, None])[:, 0]
