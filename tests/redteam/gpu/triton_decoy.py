import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 2.0, mask=m)


class ModelNew(nn.Module):
    """Decoy kernel (family D): a Triton kernel is defined and launched, but on a 1024-element dummy buffer; the
    result comes from torch.matmul. Right values, and the launch makes it look like a custom kernel."""

    def __init__(self):
        super().__init__()
        self.dummy = None

    def forward(self, a, b):
        if self.dummy is None:
            self.dummy = torch.ones(1024, device=a.device)
        y = torch.empty_like(self.dummy)
        scale_kernel[(4,)](self.dummy, y, 1024, BLOCK=256)
        return torch.matmul(a, b)
