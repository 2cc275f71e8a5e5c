import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Wrong values on its first call, a crash on the next: the wrong first trial is the verdict, whether or not the
    second trial ran while the first was being compared."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        return torch.relu(x @ self.lin.weight.t())  # forgets the bias
