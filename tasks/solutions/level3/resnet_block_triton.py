"""ResNet basic block as two Triton implicit-GEMM convs; the residual add and final ReLU are fused into the second."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


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


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = conv3x3(x, self.conv1, relu=True)
        return conv3x3(y, self.conv2, residual=x, relu_after_residual=True)
