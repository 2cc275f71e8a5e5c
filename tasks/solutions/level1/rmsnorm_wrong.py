"""RMSNorm kernel that never multiplies by the learned weight."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, y_ptr, C, w_ptr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=0.0)
    # Bug: the learned weight is never applied.
    y = x * tl.rsqrt(tl.sum(x * x, axis=0) / C + eps)
    tl.store(y_ptr + row * C + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden).uniform_(0.5, 1.5))

    def forward(self, x):
        x = x.contiguous()
        c = x.shape[-1]
        y = torch.empty_like(x)
        block = triton.next_power_of_2(c)
        _rmsnorm_kernel[(x.numel() // c,)](x, y, c, self.weight, self.eps, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
