import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        hog = torch.ones(8 * 1024 ** 3 // 4)  # 8 GiB, over a 4 GiB limit
        return torch.relu(self.lin(x)) + hog[0] - 1
