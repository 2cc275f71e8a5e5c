import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Honest fp32 GEMM in another order: K split into tiles of 64, partial products summed from the last tile to the
    first (a tiled GPU kernel's order). Its error against the fp64 oracle is the reference's own, give or take."""

    def forward(self, a, b):
        acc = None
        for k0 in reversed(range(0, a.shape[1], 64)):
            part = torch.matmul(a[:, k0:k0 + 64], b[k0:k0 + 64, :])
            acc = part if acc is None else acc + part
        return acc
