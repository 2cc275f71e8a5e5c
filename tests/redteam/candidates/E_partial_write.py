import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A buggy 'kernel' (grid of one block row): only row 0 of an uninitialised output is written."""

    def forward(self, a, b):
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        out[0] = a[0] @ b
        return out
