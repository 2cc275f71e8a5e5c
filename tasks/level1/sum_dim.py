"""Sum over the middle dimension of a 3-D tensor: (B, R, C) -> (B, C)."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
BATCH, REDUCE, COLS = {"small": (8, 256, 128), "medium": (8, 4096, 3072), "full": (128, 4096, 3072)}[SIZE]
DIM = 1


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, REDUCE, COLS)]


def get_init_inputs():
    return [DIM]
