import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest rewrite of ReLU as a clamp into a fresh tensor."""

    def forward(self, x):
        return torch.clamp(x, min=0.0)
