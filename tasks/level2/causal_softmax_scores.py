"""Causal attention probabilities: softmax(mask(q @ k^T * scale)) with an upper-triangular -inf mask.

q and k are (batch*heads, seq, head_dim); the output is (batch*heads, seq, seq)."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
if SIZE == "small":
    BATCH_HEADS, SEQ, HEAD_DIM = 4, 64, 16
elif SIZE == "medium":
    BATCH_HEADS, SEQ, HEAD_DIM = 16, 1024, 64
else:
    BATCH_HEADS, SEQ, HEAD_DIM = 256, 1024, 64


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        scores = torch.bmm(q, k.transpose(1, 2)) * self.scale
        seq = q.shape[1]
        mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(BATCH_HEADS, SEQ, HEAD_DIM), torch.randn(BATCH_HEADS, SEQ, HEAD_DIM)]


def get_init_inputs():
    return [HEAD_DIM]
