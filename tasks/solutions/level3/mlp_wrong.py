"""Triton MLP that drops the ReLU after the second layer."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, r_ptr, y_ptr, M, N, K,
                   ACT: tl.constexpr, HAS_RES: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # y = act(x @ w^T + b) (+ r), x (M, K), w (N, K) as stored by nn.Linear. ACT: 0 none, 1 relu, 2 gelu.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
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
    acc += tl.load(b_ptr + rn, mask=n_mask, other=0.0)[None, :]
    if ACT == 1:
        acc = tl.maximum(acc, 0.0)
    if ACT == 2:
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    out_mask = m_mask[:, None] & n_mask[None, :]
    offs = rm[:, None] * N + rn[None, :]
    if HAS_RES:
        acc += tl.load(r_ptr + offs, mask=out_mask, other=0.0)
    tl.store(y_ptr + offs, acc, mask=out_mask)


def linear(x, layer, act=0, residual=None):
    """act(layer(x)) (+ residual) for a 2-D x, with one Triton launch."""
    x = x.contiguous()
    m, k = x.shape
    n = layer.out_features
    y = torch.empty((m, n), device=x.device, dtype=x.dtype)
    res = residual.contiguous() if residual is not None else y
    bm, bn, bk = 64, 64, 32
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    _linear_kernel[grid](x, layer.weight, layer.bias, res, y, m, n, k,
                         ACT=act, HAS_RES=residual is not None, BM=bm, BN=bn, BK=bk)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        x = linear(x, self.fc1, act=1)
        x = linear(x, self.fc2)  # Bug: missing ReLU.
        return linear(x, self.fc3)
