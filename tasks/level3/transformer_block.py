"""Pre-LayerNorm GPT-style transformer block: causal multi-head self-attention and a GELU MLP.

h = x + proj(attention(ln1(x))); out = h + fc2(gelu(fc1(ln2(h)))). Input (batch, seq, dim)."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
if SIZE == "small":
    BATCH, SEQ, DIM, HEADS = 2, 16, 64, 4
elif SIZE == "medium":
    BATCH, SEQ, DIM, HEADS = 1, 1024, 1024, 16
else:
    BATCH, SEQ, DIM, HEADS = 4, 1024, 1024, 16
MLP_RATIO = 4


class Model(nn.Module):
    def __init__(self, dim, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def attention(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(x).reshape(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * hd ** -0.5
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, d)
        return self.proj(y)

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        return h + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(h))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS, MLP_RATIO]
