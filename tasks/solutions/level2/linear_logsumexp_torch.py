"""Linear + logsumexp written out as max + log(sum(exp(z - max)))."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        z = x @ self.linear.weight.t() + self.linear.bias
        m = z.amax(dim=1)
        return m + torch.log(torch.exp(z - m[:, None]).sum(dim=1))
