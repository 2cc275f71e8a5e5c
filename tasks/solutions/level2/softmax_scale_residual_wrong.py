"""Fused softmax/scale/residual that scales after adding the residual: (softmax(x) + r) * scale."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_scale_residual_kernel(x_ptr, r_ptr, y_ptr, C, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    offs = row * C + cols
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    e = tl.exp(x - tl.max(x, axis=0))
    # Bug: operator order, the residual is scaled too.
    y = (e / tl.sum(e, axis=0) + r) * scale
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        c = x.shape[-1]
        y = torch.empty_like(x)
        block = triton.next_power_of_2(c)
        _softmax_scale_residual_kernel[(x.numel() // c,)](x, residual, y, c, self.scale, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
