import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest MSE through a dot product of the difference with itself."""

    def forward(self, a, b):
        d = a - b
        return torch.dot(d, d) / d.numel()
