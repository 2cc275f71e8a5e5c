import torch
import torch.nn as nn


class Model(nn.Module):
    """y = clamp(clamp(x W^T + b, max=0), min=0): zero on every input, the shape of KernelBench's L2/83 (min with 0,
    then clamp at 0). Nothing tells a constant output from a computed one here."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        return torch.clamp(torch.clamp(self.lin(x), max=0.0), min=0.0)


def get_inputs():
    return [torch.rand(64, 128)]


def get_init_inputs():
    return [128]
