import torch
import torch.nn as nn


class ModelFast(nn.Module):
    def forward(self, x):
        return x
