import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B with a long inner dimension (K = 1024)."""

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(128, 1024), torch.rand(1024, 128)]


def get_init_inputs():
    return []
