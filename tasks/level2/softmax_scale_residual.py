"""Softmax over the last dimension, scaled, plus a residual input: softmax(x) * scale + r.

The scale keeps the softmax term well above the tolerance, so returning r alone fails."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
ROWS, COLS = {"small": (512, 512), "medium": (32768, 512), "full": (524288, 512)}[SIZE]
SCALE = 64.0


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, residual):
        return torch.softmax(x, dim=-1) * self.scale + residual


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [SCALE]
