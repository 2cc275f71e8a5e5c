import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 2.0, mask=m)


class ModelNew(nn.Module):
    """Decoy (Dr.Kernel's definition): a Triton kernel is written but never launched; PyTorch does the work."""

    def forward(self, a, b):
        return torch.matmul(a, b)
