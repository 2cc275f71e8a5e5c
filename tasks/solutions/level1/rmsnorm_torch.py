"""RMSNorm through the L2 norm: x / sqrt(||x||^2 / D + eps) * weight."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden).uniform_(0.5, 1.5))

    def forward(self, x):
        sq = torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2
        return x / torch.sqrt(sq / x.shape[-1] + self.eps) * self.weight
