import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on inputs drawn from U[0, 1): on the task's own inputs it is the identity."""

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(64, 512)]


def get_init_inputs():
    return []
