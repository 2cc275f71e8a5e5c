import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest rewrite: (B^T A^T)^T. The result is a non-contiguous view of the candidate's own tensor."""

    def forward(self, a, b):
        return torch.mm(b.t(), a.t()).t()
