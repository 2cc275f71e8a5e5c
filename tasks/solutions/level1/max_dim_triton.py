"""Max (values) over one dimension: a tiled row reduction with a -inf identity."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max_kernel(x_ptr, y_ptr, R, C, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < R
    acc = tl.full((BLOCK_R, BLOCK_C), -float("inf"), dtype=tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = row_mask[:, None] & (cols[None, :] < C)
        x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=mask, other=-float("inf"))
        acc = tl.maximum(acc, x)
    tl.store(y_ptr + rows, tl.max(acc, axis=1), mask=row_mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        # Move the reduced dimension last and view the tensor as (rows, C).
        x = x.movedim(self.dim, -1).contiguous()
        c = x.shape[-1]
        rows = x.numel() // c
        y = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        block_r = 16
        _row_max_kernel[(triton.cdiv(rows, block_r),)](x, y, rows, C=c, BLOCK_R=block_r, BLOCK_C=256)
        return y
