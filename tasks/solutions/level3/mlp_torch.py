"""MLP written with addmm and clamp instead of nn.Linear / ReLU."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        for layer in (self.fc1, self.fc2):
            x = torch.addmm(layer.bias, x, layer.weight.t()).clamp(min=0)
        return torch.addmm(self.fc3.bias, x, self.fc3.weight.t())
