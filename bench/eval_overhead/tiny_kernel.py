import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.clamp(torch.addmm(self.lin.bias, x, self.lin.weight.t()), min=0)
