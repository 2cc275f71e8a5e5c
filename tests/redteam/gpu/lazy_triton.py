"""Lazy candidate (Dr.Kernel's "lazy optimisation"): torch.matmul does the work, and one trivial Triton kernel
copies the first 1024 values of the result through itself, so a Triton kernel runs on real data in every call.
Correct values; the kernel's share of the GPU time is a few microseconds of milliseconds: coverage near 0."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=m) * 1.0, mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.matmul(a, b)
        touch_kernel[(4,)](c, 1024, BLOCK=256)
        return c
