import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest rewrite: one fused addmm, then an in-place ReLU on its own intermediate (not on an input)."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        y = torch.addmm(self.lin.bias, x, self.lin.weight.t())
        return y.relu_()
