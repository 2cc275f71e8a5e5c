"""Three-layer MLP: Linear -> ReLU -> Linear -> ReLU -> Linear."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
if SIZE == "small":
    BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 32, 64, 128, 48
elif SIZE == "medium":
    BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 1024, 1024, 4096, 1024
else:
    BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 4096, 1024, 4096, 1024


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 4.0]


def get_init_inputs():
    return [IN_FEATURES, HIDDEN, OUT_FEATURES]
