"""Sum over the middle dimension whose loop stops one row early (rows masked to R - 1)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_mid_kernel(x_ptr, y_ptr, R, C, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < C
    base = x_ptr + b * R * C
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < R - 1) & col_mask[None, :]
        acc += tl.load(base + rows[:, None] * C + cols[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + b * C + cols, tl.sum(acc, axis=0), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim % x.dim()
        shape = x.shape
        outer = 1
        for s in shape[:dim]:
            outer *= s
        inner = 1
        for s in shape[dim + 1:]:
            inner *= s
        r = shape[dim]
        x = x.contiguous()
        y = torch.empty(outer * inner, device=x.device, dtype=x.dtype)
        block = 256
        _sum_mid_kernel[(outer, triton.cdiv(inner, block))](x, y, r, inner, BLOCK_R=8, BLOCK_C=block)
        return y.reshape(shape[:dim] + shape[dim + 1:])
