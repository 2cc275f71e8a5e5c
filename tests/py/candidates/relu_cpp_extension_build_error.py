"""relu_cpp_extension.py with a C++ error (a call of a function that does not exist), built verbosely: torch then prints the
compiler's output instead of putting it into the exception."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
  auto out = torch::empty_like(x);
  float* o = out.data_ptr<float>();
  const float* in = x.data_ptr<float>();
  kgym_undefined_relu(o, in, x.numel());
  return out;
}
"""

_ext = load_inline(name="kgym_test_relu_bad_ext", cpp_sources=_SRC, functions=["relu_forward"], verbose=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.relu_forward(x)
