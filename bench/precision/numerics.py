"""Numerical stand-ins for kernels, applied to any PyTorch model through a TorchFunctionMode: the matmul-like
operations (linear, matmul, mm, bmm, addmm, baddbmm, einsum, conv1d/2d/3d) and sums either reordered the way an
honest fp32 kernel would (a tiled GEMM's K loop, a conv's input-channel blocks, a blocked reduction), or fed operands
rounded the way a lower-precision kernel reads them (TF32: 10 mantissa bits, truncated as a tensor core reads fp32;
bf16 / fp16: rounded to nearest), or with their results stored in bf16 / fp16. bench/precision/calibrate.py uses them
to calibrate the strict precision budget (src/eval/precision.h); tests/redteam's K_* candidates use the same ideas.
"""
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

MATMULS = {torch.nn.functional.linear, torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm,
           torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.mm, torch.Tensor.bmm, torch.einsum,
           torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d}
SUMS = {torch.sum, torch.Tensor.sum, torch.mean, torch.Tensor.mean}


def tf32_truncate(x):
    """x with the low 13 mantissa bits cleared (what a tensor core reads of an fp32 operand)."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        return x
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).view(x.shape)


def through(dtype):
    def f(x):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            return x
        return x.to(dtype).to(x.dtype)
    return f


def _blocked_matmul(a, b, block):
    """a @ b with K split into blocks of `block`, partial products summed one after the other (a tiled GEMM)."""
    k = a.shape[-1]
    acc = None
    for k0 in range(0, k, block):
        part = torch.matmul(a[..., k0:k0 + block], b[..., k0:k0 + block, :])
        acc = part if acc is None else acc + part
    return acc


def _blocked_sum(x, dim, keepdim, block=64):
    if dim is None:
        flat = x.reshape(-1)
        parts = [flat[i:i + block].sum() for i in range(0, flat.numel(), block)]
        total = torch.zeros((), dtype=x.dtype)
        for p in reversed(parts):
            total = total + p
        return total
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) != 1:
        return torch.sum(x, dim=dim, keepdim=keepdim)
    d = dims[0] % x.dim()
    n = x.shape[d]
    acc = None
    for i in reversed(range(0, n, block)):
        p = x.narrow(d, i, min(block, n - i)).sum(dim=d, keepdim=True)
        acc = p if acc is None else acc + p
    return acc if keepdim else acc.squeeze(d)


class Numerics(TorchFunctionMode):
    """mode: "reorder" (honest fp32, other order), "tf32", "bf16", "fp16" (operands of matmul-likes rounded),
    "bf16_out" / "fp16_out" (their results stored in bf16 / fp16)."""

    def __init__(self, mode, block=32):
        super().__init__()
        self.mode, self.block = mode, block

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.mode == "reorder":
            return self._reorder(func, args, kwargs)
        if func in MATMULS:
            if self.mode in ("tf32", "bf16", "fp16"):
                r = {"tf32": tf32_truncate, "bf16": through(torch.bfloat16), "fp16": through(torch.float16)}[self.mode]
                args = tuple(r(a) if isinstance(a, torch.Tensor) and a.dim() >= 2 else a for a in args)
                return func(*args, **kwargs)
            out = func(*args, **kwargs)
            return through(torch.bfloat16 if self.mode == "bf16_out" else torch.float16)(out)
        return func(*args, **kwargs)

    def _reorder(self, func, args, kwargs):
        if func is torch.nn.functional.linear:
            x, w = args[0], args[1]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            y = _blocked_matmul(x, w.t(), self.block)
            return y + b if b is not None else y
        if func in (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm, torch.bmm,
                    torch.Tensor.bmm) and args[0].dim() >= 2 and args[1].dim() >= 2:
            return _blocked_matmul(args[0], args[1], self.block)
        if func is torch.nn.functional.conv2d and kwargs.get("groups", args[6] if len(args) > 6 else 1) == 1:
            x, w = args[0], args[1]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            rest = dict(zip(("stride", "padding", "dilation"), args[3:6]))
            rest.update({k: v for k, v in kwargs.items() if k in ("stride", "padding", "dilation")})
            acc = None
            for c0 in reversed(range(0, x.shape[1], 8)):
                part = F.conv2d(x[:, c0:c0 + 8], w[:, c0:c0 + 8], None, **rest)
                acc = part if acc is None else acc + part
            return acc + b.view(1, -1, 1, 1) if b is not None else acc
        if func in (torch.sum, torch.Tensor.sum) and not kwargs.get("dtype"):
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
            if isinstance(args[0], torch.Tensor) and args[0].is_floating_point():
                return _blocked_sum(args[0], dim, keep)
        return func(*args, **kwargs)


def run_with(model, inputs, mode):
    with torch.no_grad():
        if mode is None:
            return model(*inputs)
        with Numerics(mode):
            return model(*inputs)
