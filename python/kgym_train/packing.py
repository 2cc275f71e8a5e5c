"""Packed micro-batches: sequences laid end to end in one row, and the log-probs of chosen tokens over them.

A `Pack` is the learner's unit of forward work: token ids and positions (N,), positions restarting at 0 for each
sequence, and the sequence offsets `cu_seqlens` (S+1,) that the attention reads (attention.packed_causal: each
sequence attends to itself only; no padding, no dense mask). Its cost is the sum of its sequences' lengths, which
is what micro-batches are filled by (losses.micro_batches).

`token_logprobs` returns, for chosen positions of a pack, the float32 log-probability of a target token there (and
the entropy of the distribution, without gradient). Only the chosen positions go through the output head, and in
chunks of `head_chunk_tokens` under activation checkpointing: the (tokens x vocabulary) float32 logits of a whole
micro-batch (32 k tokens x 152 k entries = 20 GB for Qwen3) never exist at once, only one chunk's, in the forward
and again in the backward.

The policy side (models.Policy, or any object with the same two methods):
  packed_hidden(pack, select) -> (h, head)   h (n, ·) for the selected positions, head(h) -> (n, V) logits
"""
import torch
import torch.utils.checkpoint

HEAD_CHUNK_ELEMENTS = 1 << 27  # float32 logits per chunk (512 MB): 880 tokens of Qwen3's 151 936-entry vocabulary


class Pack:
    def __init__(self, seqs, device):
        if not seqs or any(len(s) == 0 for s in seqs):
            raise ValueError("a pack needs at least one sequence and no empty one")
        lengths = [len(s) for s in seqs]
        self.offsets = [0]
        for n in lengths:
            self.offsets.append(self.offsets[-1] + n)
        self.max_len = max(lengths)
        flat = [t for s in seqs for t in s]
        self.ids = torch.tensor(flat, dtype=torch.long, device=device)
        self.positions = torch.cat([torch.arange(n, dtype=torch.long) for n in lengths]).to(device)
        self.cu_seqlens = torch.tensor(self.offsets, dtype=torch.int32, device=device)

    def __len__(self):
        return self.offsets[-1]

    def at(self, seq, pos):
        """The packed index of position `pos` of sequence `seq`."""
        return self.offsets[seq] + pos


def _head_logprobs(head, h, targets, with_entropy):
    logsm = torch.log_softmax(head(h).float(), dim=-1)
    logp = logsm.gather(1, targets[:, None])[:, 0]
    if not with_entropy:
        return logp, None
    with torch.no_grad():
        return logp, -(logsm.exp() * logsm).sum(-1)


def token_logprobs(policy, pack, select, targets, with_entropy=False, vocab_size=None):
    """(logp (n,), entropy (n,) or None) at packed indices `select` (n,) for `targets` (n,) token ids."""
    device = pack.ids.device
    select = torch.as_tensor(select, dtype=torch.long, device=device)
    targets = torch.as_tensor(targets, dtype=torch.long, device=device)
    h, head = policy.packed_hidden(pack, select)
    if len(select) == 0:
        return h.new_zeros(0, dtype=torch.float32), (h.new_zeros(0, dtype=torch.float32) if with_entropy else None)
    vocab = vocab_size or _out_features(head, h)
    chunk = max(1, HEAD_CHUNK_ELEMENTS // max(1, vocab))
    logps, ents = [], []
    for a in range(0, len(select), chunk):
        hc, tc = h[a:a + chunk], targets[a:a + chunk]
        if torch.is_grad_enabled() and h.requires_grad:
            lp, ent = torch.utils.checkpoint.checkpoint(_head_logprobs, head, hc, tc, with_entropy,
                                                        use_reentrant=False)
        else:
            lp, ent = _head_logprobs(head, hc, tc, with_entropy)
        logps.append(lp)
        ents.append(ent)
    return torch.cat(logps), (torch.cat(ents) if with_entropy else None)


def _out_features(head, h):
    weight = getattr(head, "weight", None)
    if weight is not None:
        return weight.shape[0]
    return h.shape[-1]  # an identity head: h already holds the logits
