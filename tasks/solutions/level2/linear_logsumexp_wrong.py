"""Fused Linear + logsumexp that forgets to add the row max back after the log."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_lse_partial_kernel(x_ptr, w_ptr, b_ptr, pmax_ptr, psum_ptr, M, N, K, T,
                               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # GEMM tile of z = x @ w^T + b; instead of storing z, store per-row (max, sum exp(z - max)) of the tile.
    pid_n = tl.program_id(1)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_mask = rm < M
    n_mask = rn < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        k_mask = kk < K
        a = tl.load(x_ptr + rm[:, None] * K + kk[None, :], mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    z = acc + tl.load(b_ptr + rn, mask=n_mask, other=0.0)[None, :]
    z = tl.where(n_mask[None, :], z, -float("inf"))
    tile_max = tl.max(z, axis=1)
    tile_sum = tl.sum(tl.exp(z - tile_max[:, None]), axis=1)
    tl.store(pmax_ptr + rm * T + pid_n, tile_max, mask=m_mask)
    tl.store(psum_ptr + rm * T + pid_n, tile_sum, mask=m_mask)


@triton.jit
def _lse_combine_kernel(pmax_ptr, psum_ptr, y_ptr, T, BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    mask = t < T
    m = tl.load(pmax_ptr + row * T + t, mask=mask, other=-float("inf"))
    s = tl.load(psum_ptr + row * T + t, mask=mask, other=0.0)
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    # Bug: log(sum exp(z - max)) without the "+ max".
    tl.store(y_ptr + row, tl.log(total))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        m, k = x.shape
        n = self.linear.out_features
        bm, bn, bk = 64, 64, 32
        tiles = triton.cdiv(n, bn)
        pmax = torch.empty((m, tiles), device=x.device, dtype=torch.float32)
        psum = torch.empty((m, tiles), device=x.device, dtype=torch.float32)
        _linear_lse_partial_kernel[(triton.cdiv(m, bm), tiles)](
            x, self.linear.weight, self.linear.bias, pmax, psum, m, n, k, tiles, BM=bm, BN=bn, BK=bk)
        y = torch.empty((m,), device=x.device, dtype=x.dtype)
        _lse_combine_kernel[(m,)](pmax, psum, y, tiles, BLOCK_T=max(16, triton.next_power_of_2(tiles)))
        return y
