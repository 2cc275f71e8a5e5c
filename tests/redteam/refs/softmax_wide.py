import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over 16384 columns: every output is about 1e-4, far below an absolute tolerance of 1e-2."""

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.rand(8, 16384)]


def get_init_inputs():
    return []
