"""RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
ROWS, HIDDEN = {"small": (256, 1024), "medium": (8192, 4096), "full": (131072, 4096)}[SIZE]
EPS = 1e-6


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden).uniform_(0.5, 1.5))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_inputs():
    return [torch.randn(ROWS, HIDDEN) * 2.0]


def get_init_inputs():
    return [HIDDEN, EPS]
