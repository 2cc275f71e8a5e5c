"""2-D convolution, 3x3 kernel, stride 1, padding 1, with bias (NCHW)."""
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
KERNEL_SIZE, PADDING = 3, 1


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL_SIZE, PADDING]
