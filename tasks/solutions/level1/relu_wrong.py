"""ReLU kernel with an off-by-one load offset: every output reads its neighbour."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # Bug: reads x[i + 1] for output i.
    x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        block = 1024
        _relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
        return y
