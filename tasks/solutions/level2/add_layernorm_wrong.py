"""Add + LayerNorm that normalises x alone and adds the residual afterwards (post- vs pre-residual mix-up)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_layernorm_kernel(x_ptr, r_ptr, y_ptr, C, w_ptr, b_ptr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    offs = row * C + cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / C
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / C
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    # Bug: LayerNorm(x) + residual instead of LayerNorm(x + residual).
    y = xc * tl.rsqrt(var + eps) * w + b + tl.load(r_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        c = x.shape[-1]
        y = torch.empty_like(x)
        block = triton.next_power_of_2(c)
        _add_layernorm_kernel[(x.numel() // c,)](x, residual, y, c, self.ln.weight, self.ln.bias, self.ln.eps, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
