"""RMSNorm with a Triton kernel for the weight scale only: the normalisation (three passes) stays in PyTorch."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, n, C, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs % C, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden).uniform_(0.5, 1.5))

    def forward(self, x):
        normed = (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)).contiguous()
        y = torch.empty_like(normed)
        n = normed.numel()
        _scale_kernel[(triton.cdiv(n, 1024),)](normed, self.weight, y, n, normed.shape[-1], BLOCK=1024)
        return y
