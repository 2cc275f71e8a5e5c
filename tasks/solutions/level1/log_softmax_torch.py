"""Log-softmax written out with an explicit max shift."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        shifted = x - x.amax(dim=-1, keepdim=True)
        return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
