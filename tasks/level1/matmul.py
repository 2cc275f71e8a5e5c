"""Square-ish fp32 matrix multiplication: C = A @ B with A (M, K) and B (K, N)."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
M, K, N = {"small": (96, 80, 112), "medium": (1024, 4096, 4096), "full": (4096, 4096, 4096)}[SIZE]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
