"""LayerNorm over the last dimension with a learned affine transform.

Inputs have a non-zero mean and a non-unit scale, and the affine parameters are
initialised away from (1, 0), so skipping any part of the computation is visible."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
ROWS, HIDDEN = {"small": (256, 1024), "medium": (10240, 4096), "full": (163840, 4096)}[SIZE]
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(ROWS, HIDDEN) * 2.0 + 0.5]


def get_init_inputs():
    return [HIDDEN, EPS]
