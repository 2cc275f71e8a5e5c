"""An honest program that calls torch.compile on part of its forward (a common model output): the GEMM stays an eager
torch.matmul and the epilogue, relu(c) + min(c, 0) (= c, exactly), is compiled by Inductor into one generated Triton
kernel. Inductor compiles in the first call and leaves threads behind; none of its kernels is in this source, so the
candidate's own share of the GPU time (coverage) is 0 and the verdict is correct."""
import torch
import torch.nn as nn


def _epilogue(c):
    return torch.relu(c) + torch.minimum(c, torch.zeros_like(c))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.epilogue = torch.compile(_epilogue)

    def forward(self, a, b):
        return self.epilogue(torch.matmul(a, b))
