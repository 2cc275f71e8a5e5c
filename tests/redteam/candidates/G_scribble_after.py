import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Correct output, but the input is reused as scratch space afterwards (left overwritten)."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        out = torch.relu(self.lin(x))
        x.mul_(0.5)
        return out
