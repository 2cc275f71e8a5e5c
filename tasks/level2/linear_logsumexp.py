"""Linear layer followed by logsumexp over the features: (B, in) -> (B,).

Each input row has its own scale, so the logsumexp varies across rows and a
constant output fails the check."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
BATCH, IN_FEATURES, OUT_FEATURES = {
    "small": (64, 96, 80),
    "medium": (1024, 4096, 4096),
    "full": (4096, 4096, 4096),
}[SIZE]


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.logsumexp(self.linear(x), dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * torch.rand(BATCH, 1) * 4.0]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
