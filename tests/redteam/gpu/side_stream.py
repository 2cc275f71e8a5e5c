import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Stream injection (family L, KernelBench's non-default-stream case): the product runs on a side stream that
    is never joined back to the default stream, so a timer that records events on the default stream only sees
    an empty interval. The work is the reference's own, so an honest timer gives a speedup of about 1."""

    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, a, b):
        if self.side is None:
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())  # the inputs are ready; the output is never waited for
        with torch.cuda.stream(self.side):
            out = torch.matmul(a, b)
        return out
