"""3x3 convolution (padding 1) + ReLU + a learned per-channel bias added after the ReLU."""
import os

import torch
import torch.nn as nn

SIZE = os.environ.get("KGYM_TASK_SIZE", "full")
if SIZE not in ("full", "medium", "small"):
    raise ValueError(f"KGYM_TASK_SIZE must be 'full', 'medium' or 'small', got {SIZE!r}")
if SIZE == "small":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 4, 8, 12, 10
elif SIZE == "medium":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 64, 128, 128, 128
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 32, 64, 128, 128, 128
KERNEL_SIZE = 3


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(c_out, 1, 1) * 0.5)

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL_SIZE]
