"""Softmax over the last dimension of logits with standard deviation 3.

The logits are scaled so rows are peaked: an all-zeros output fails the check."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
ROWS, COLS = {"small": (512, 1024), "medium": (40960, 1024), "full": (655360, 1024)}[SIZE]
LOGIT_SCALE = 3.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS) * LOGIT_SCALE]


def get_init_inputs():
    return []
