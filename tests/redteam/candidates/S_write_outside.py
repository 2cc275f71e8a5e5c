import os

import torch
import torch.nn as nn

# Filled in by the test: paths outside the candidate's scratch directory (the test's own temporary directory,
# the evaluating user's home, the repository, /tmp) where a file must not appear.
TARGETS = []
MARKER = "kgym-redteam-escape"


def try_writes():
    written = []
    for path in TARGETS:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(MARKER + "\n")
            written.append(path)
        except OSError:
            pass
    return written


class ModelNew(nn.Module):
    """Writing outside scratch (family S: file replay, planting files for a later run). The output is right
    either way; what the test checks is that none of the files exists on the host afterwards."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.written = try_writes()

    def forward(self, x):
        try_writes()
        return torch.relu(self.lin(x))
