"""Triton transformer block whose attention kernel forgets the causal mask (every query sees every key)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / C
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / C
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * C + cols, xc * tl.rsqrt(var + eps) * w + b, mask=mask)


def layernorm(x, ln):
    y = torch.empty_like(x)
    c = x.shape[-1]
    block = triton.next_power_of_2(c)
    _layernorm_kernel[(x.numel() // c,)](x, ln.weight, ln.bias, y, c, ln.eps, BLOCK=block,
                                         num_warps=8 if block >= 2048 else 4)
    return y


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


@triton.jit
def _attention_kernel(qkv_ptr, o_ptr, S, D, H, scale,
                      HD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # Flash-style attention over the packed qkv activation (B*S, 3*D): q, k, v of head h live at
    # columns h*HD, D + h*HD and 2*D + h*HD. Online softmax; the (S, S) scores never hit memory.
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    rows = tl.program_id(1) * BM + tl.arange(0, BM)
    d = tl.arange(0, HD)
    stride = 3 * D
    base = qkv_ptr + b.to(tl.int64) * S * stride + h * HD
    row_mask = rows < S
    q = tl.load(base + rows[:, None] * stride + d[None, :], mask=row_mask[:, None], other=0.0) * scale
    m_i = tl.full((BM,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BM,), dtype=tl.float32)
    acc = tl.zeros((BM, HD), dtype=tl.float32)
    # Bug: no causal restriction on the key range or the scores.
    for j0 in range(0, S, BN):
        cols = j0 + tl.arange(0, BN)
        col_mask = cols < S
        k = tl.load(base + D + cols[None, :] * stride + d[:, None], mask=col_mask[None, :], other=0.0)
        s = tl.dot(q, k, input_precision="ieee")
        s = tl.where(col_mask[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(base + 2 * D + cols[:, None] * stride + d[None, :], mask=col_mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    o = o_ptr + (b.to(tl.int64) * S + rows[:, None]) * D + h * HD + d[None, :]
    tl.store(o, out, mask=row_mask[:, None])


def attention(qkv, b, s, d, heads):
    hd = d // heads
    out = torch.empty((b * s, d), device=qkv.device, dtype=qkv.dtype)
    bm, bn = 64, 32
    _attention_kernel[(b * heads, triton.cdiv(s, bm))](qkv, out, s, d, heads, hd ** -0.5,
                                                       HD=hd, BM=bm, BN=bn)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim, heads, mlp_ratio):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        x2 = x.reshape(b * s, d).contiguous()
        qkv = linear(layernorm(x2, self.ln1), self.qkv)
        h = linear(attention(qkv, b, s, d, self.heads), self.proj, residual=x2)
        f = linear(layernorm(h, self.ln2), self.fc1, act=2)
        return linear(f, self.fc2, residual=h).reshape(b, s, d)
