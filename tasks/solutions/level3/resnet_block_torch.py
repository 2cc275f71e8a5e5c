"""ResNet block with functional convolutions and clamp in place of ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = F.conv2d(x, self.conv1.weight, self.conv1.bias, padding=1).clamp(min=0)
        return (F.conv2d(y, self.conv2.weight, self.conv2.bias, padding=1) + x).clamp(min=0)
