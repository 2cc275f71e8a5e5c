"""Row log-softmax: x - max - log(sum(exp(x - max))), one program per row."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _log_softmax_kernel(x_ptr, y_ptr, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    y = x - m - tl.log(s)
    tl.store(y_ptr + row * C + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        c = x.shape[-1]
        y = torch.empty_like(x)
        block = triton.next_power_of_2(c)
        _log_softmax_kernel[(x.numel() // c,)](x, y, c, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
