"""A Triton kernel for the residual add only; the LayerNorm stays PyTorch's."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, r_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(r_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        s = torch.empty_like(x)
        n = x.numel()
        _add_kernel[(triton.cdiv(n, 1024),)](x, residual, s, n, BLOCK=1024)
        return self.ln(s)
