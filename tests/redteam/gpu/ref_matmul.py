import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B in fp32, 4096 x 4096 x 4096: milliseconds of GPU work per call, far above the per-call overhead
    of the timing path, so work that the timer misses shows up as a large speedup."""

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(4096, 4096), torch.rand(4096, 4096)]


def get_init_inputs():
    return []
