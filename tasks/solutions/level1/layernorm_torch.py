"""LayerNorm written out from var_mean (population variance)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return torch.addcmul(self.ln.bias, (x - mean) * torch.rsqrt(var + self.ln.eps), self.ln.weight)
