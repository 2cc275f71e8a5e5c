"""Sum over a dimension as a contraction with a vector of ones."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        moved = x.movedim(self.dim, -1)
        ones = torch.ones(moved.shape[-1], 1, device=x.device, dtype=x.dtype)
        return torch.matmul(moved, ones).squeeze(-1)
