"""Exact GELU written out through the normal CDF: x * Phi(x) with Phi from erfc."""
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 0.5 * torch.erfc(-x / math.sqrt(2.0))
