import sys

import torch
import torch.nn as nn

_line = "x" * 1023 + "\n"


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.flooded = False

    def forward(self, x):
        if not self.flooded:
            self.flooded = True
            for _ in range(100 * 1024):  # 100 MB
                sys.stdout.write(_line)
            sys.stdout.write("END-OF-FLOOD\n")
            sys.stdout.flush()
        return torch.relu(self.lin(x))
