"""Softmax in PyTorch; a Triton kernel only for the scale-and-add epilogue."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_add_kernel(p_ptr, r_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, p * scale + r, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, residual):
        p = torch.softmax(x, dim=-1).contiguous()
        residual = residual.contiguous()
        y = torch.empty_like(p)
        n = p.numel()
        _scale_add_kernel[(triton.cdiv(n, 1024),)](p, residual, y, n, self.scale, BLOCK=1024)
        return y
