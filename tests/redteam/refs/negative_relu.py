import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(-(x W^T)) with W >= 0: zero everywhere on the task's own inputs (U[0, 1)), not on signed ones. A
    degenerate problem in the way KernelBench's L2/9 (rand inputs, linear, minus 2, ReLU) and L2/83 are at their
    sizes: a constant or memoised output passes every draw of get_inputs."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n, bias=False)
        with torch.no_grad():
            self.lin.weight.abs_()

    def forward(self, x):
        return torch.relu(-self.lin(x))


def get_inputs():
    return [torch.rand(64, 128)]


def get_init_inputs():
    return [128]
