import torch.nn as nn


class ModelNew(nn.Module):
    """In-place ReLU on the input, returned as the output: no allocation at all."""

    def forward(self, x):
        return x.clamp_(min=0.0)
