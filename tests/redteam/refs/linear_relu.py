import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x W^T + b)."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.lin(x))


def get_inputs():
    return [torch.rand(64, 128)]


def get_init_inputs():
    return [128]
