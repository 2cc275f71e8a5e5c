"""Small CNN in Triton: implicit-GEMM convs with bias+ReLU epilogues, a 2x2 max-pool kernel and a GEMM classifier."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CHANNELS = (3, 32, 64, 128)


@triton.jit
def _conv3x3_kernel(x_ptr, w_ptr, b_ptr, r_ptr, y_ptr, NB, C_in, H, W, C_out,
                    RELU: tl.constexpr, HAS_RES: tl.constexpr, RELU_AFTER_RES: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Same-padded 3x3 convolution as an implicit GEMM: rows are output pixels, columns output channels.
    # Epilogue: + bias, [relu], [+ residual (same shape as the output)], [relu].
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    hw = H * W
    M = NB * hw
    k_total = C_in * 9
    n = rm // hw
    pix = rm % hw
    oh = pix // W
    ow = pix % W
    n_mask = rn < C_out
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, k_total, BK):
        kk = k0 + tl.arange(0, BK)
        ci = kk // 9
        kh = (kk % 9) // 3
        kw = kk % 3
        ih = oh[:, None] + kh[None, :] - 1
        iw = ow[:, None] + kw[None, :] - 1
        a_mask = ((rm[:, None] < M) & (kk[None, :] < k_total)
                  & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
        a = tl.load(x_ptr + ((n[:, None] * C_in + ci[None, :]) * H + ih) * W + iw, mask=a_mask, other=0.0)
        w = tl.load(w_ptr + rn[None, :] * k_total + kk[:, None],
                    mask=(kk[:, None] < k_total) & n_mask[None, :], other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=n_mask, other=0.0)[None, :]
    if RELU:
        acc = tl.maximum(acc, 0.0)
    out_mask = (rm[:, None] < M) & n_mask[None, :]
    offs = (n[:, None] * C_out + rn[None, :]) * hw + pix[:, None]
    if HAS_RES:
        acc += tl.load(r_ptr + offs, mask=out_mask, other=0.0)
    if RELU_AFTER_RES:
        acc = tl.maximum(acc, 0.0)
    tl.store(y_ptr + offs, acc, mask=out_mask)


def conv3x3(x, conv, relu=False, residual=None, relu_after_residual=False):
    x = x.contiguous()
    nb, c_in, h, w = x.shape
    c_out = conv.out_channels
    y = torch.empty((nb, c_out, h, w), device=x.device, dtype=x.dtype)
    res = residual.contiguous() if residual is not None else y
    bm, bn, bk = 64, 64, 32
    grid = (triton.cdiv(nb * h * w, bm), triton.cdiv(c_out, bn))
    _conv3x3_kernel[grid](x, conv.weight.contiguous(), conv.bias, res, y, nb, c_in, h, w, c_out,
                          RELU=relu, HAS_RES=residual is not None, RELU_AFTER_RES=relu_after_residual,
                          BM=bm, BN=bn, BK=bk)
    return y


@triton.jit
def _pool2x2_kernel(x_ptr, y_ptr, total, H, W, BLOCK: tl.constexpr):
    # 2x2, stride 2 pooling over (N*C, H, W) planes; one output element per lane.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    ho = H // 2
    wo = W // 2
    plane = offs // (ho * wo)
    oh = (offs % (ho * wo)) // wo
    ow = offs % wo
    base = x_ptr + plane * H * W + (2 * oh) * W + 2 * ow
    v00 = tl.load(base, mask=mask, other=0.0)
    v01 = tl.load(base + 1, mask=mask, other=0.0)
    v10 = tl.load(base + W, mask=mask, other=0.0)
    v11 = tl.load(base + W + 1, mask=mask, other=0.0)
    out = tl.maximum(tl.maximum(v00, v01), tl.maximum(v10, v11))
    tl.store(y_ptr + offs, out, mask=mask)


def pool2x2(x):
    nb, c, h, w = x.shape
    y = torch.empty((nb, c, h // 2, w // 2), device=x.device, dtype=x.dtype)
    total = y.numel()
    block = 1024
    _pool2x2_kernel[(triton.cdiv(total, block),)](x, y, total, h, w, BLOCK=block)
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


class ModelNew(nn.Module):
    def __init__(self, height, width, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS[0], CHANNELS[1], 3, padding=1)
        self.conv2 = nn.Conv2d(CHANNELS[1], CHANNELS[2], 3, padding=1)
        self.conv3 = nn.Conv2d(CHANNELS[2], CHANNELS[3], 3, padding=1)
        self.fc = nn.Linear(CHANNELS[3] * (height // 8) * (width // 8), num_classes)

    def forward(self, x):
        x = pool2x2(conv3x3(x, self.conv1, relu=True))
        x = pool2x2(conv3x3(x, self.conv2, relu=True))
        x = pool2x2(conv3x3(x, self.conv3, relu=True))
        return linear(x.reshape(x.shape[0], -1), self.fc)
