import time

import numpy
import torch
import torch.nn as nn

# Every clock and statistic the harness might read says "no time passed".
_t = [0.0]
time.perf_counter = lambda: _t[0]
time.perf_counter_ns = lambda: int(_t[0])
time.monotonic = lambda: _t[0]
time.monotonic_ns = lambda: int(_t[0])
time.time = lambda: _t[0]
time.process_time = lambda: _t[0]
torch.cuda.Event.elapsed_time = lambda self, end: 1e-6
torch.cuda.synchronize = lambda *a, **k: None
numpy.mean = lambda *a, **k: 1e-6
numpy.median = lambda *a, **k: 1e-6
_real_sleep = time.sleep


class ModelNew(nn.Module):
    """Honest but slow (sleeps 30 ms per call) while claiming, through the patched clocks, to take no time."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        _real_sleep(0.03)
        return torch.relu(self.lin(x))
