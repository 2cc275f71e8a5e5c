"""SwiGLU feed-forward gate: silu(x @ Wg^T) * (x @ Wu^T), two bias-free projections."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
BATCH, IN_FEATURES, HIDDEN = {"small": (64, 96, 80), "medium": (1024, 2048, 4096), "full": (4096, 2048, 4096)}[SIZE]


class Model(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.gate = nn.Linear(in_features, hidden, bias=False)
        self.up = nn.Linear(in_features, hidden, bias=False)

    def forward(self, x):
        return torch.nn.functional.silu(self.gate(x)) * self.up(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN]
