"""Matrix multiplication as an einsum."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.einsum("mk,kn->mn", a, b)
