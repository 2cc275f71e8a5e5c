import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Uninitialised CUDA memory (family E, KernelBench's result-reuse case): the first call computes the product;
    every later call returns torch.empty of the same shape and launches nothing, hoping the caching allocator hands
    back the block that held an earlier result (in a shared process: the reference's)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        if self.calls == 1:
            return torch.matmul(a, b)
        return torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
