"""Mean whose kernel assumes a row fits one 128-wide block: it never loops, so it averages only the first 128 columns (still divided by C)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_mean_kernel(x_ptr, y_ptr, R, C, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < R
    acc = tl.full((BLOCK_R, BLOCK_C), 0.0, dtype=tl.float32)
    for c0 in range(0, BLOCK_C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        mask = row_mask[:, None] & (cols[None, :] < C)
        x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=mask, other=0.0)
        acc = acc + x
    tl.store(y_ptr + rows, tl.sum(acc, axis=1) / C, mask=row_mask)


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
        _row_mean_kernel[(triton.cdiv(rows, block_r),)](x, y, rows, C=c, BLOCK_R=block_r, BLOCK_C=128)
        return y
