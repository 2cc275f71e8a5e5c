"""CUDA backend (`--backend cuda`): the whole product in one hand-written CUDA kernel (16x16 shared-memory tiles,
fp32 accumulation) built with torch.utils.cpp_extension.load_inline when the module is imported. Every kernel of
the timed calls is the extension's own, so the time coverage is close to 1 (kernels of the built extension count
as the candidate's: the supervisor takes their names from the `__global__` declarations below)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>

#define TILE 16

__global__ void kgym_tiled_matmul_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? a[(long long)row * k + ka] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? b[(long long)kb * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < TILE; ++t) acc += as[threadIdx.y][t] * bs[t][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[(long long)row * n + col] = acc;
}

torch::Tensor tiled_matmul(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
  TORCH_CHECK(a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat, "inputs must be float32");
  auto ac = a.contiguous(), bc = b.contiguous();
  int m = ac.size(0), k = ac.size(1), n = bc.size(1);
  TORCH_CHECK(bc.size(0) == k, "inner dimensions differ");
  auto c = torch::empty({m, n}, ac.options());
  dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  kgym_tiled_matmul_kernel<<<grid, block, 0, c10::cuda::getCurrentCUDAStream()>>>(
      ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), m, n, k);
  return c;
}
"""

_CPP = "torch::Tensor tiled_matmul(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="kgym_redteam_tiled_matmul", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["tiled_matmul"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return _ext.tiled_matmul(a, b)
