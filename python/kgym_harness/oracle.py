"""The fp64 oracle, in the reference's (pristine) worker: the first default trials (correctness.ORACLE_TRIALS of them)
computed again with the model and its floating inputs cast to float64, kept at up to SAMPLES random elements per
output (src/eval/precision.h judges the candidate's error and the fp32 reference's against it). After the trials, the
reference is also computed on the first one's inputs at lower precisions (TF32 matmuls and bf16 / fp16 autocast on a
GPU; the same operand roundings on a CPU, where TF32 does not exist) and their errors against the oracle are reported
beside its own ("fp32", the same run without the rounding): what "TF32-level" means for this problem, and whether a
downgrade would show in it at all.

Everything here is best effort: a model that cannot run in float64 (an op without a double kernel, memory) gives no
oracle, and the verdict then has no precision class; the reference itself is never failed by it.
"""
import torch
from torch.overrides import TorchFunctionMode

from .runner import _Tensor, _no_grad, seed_all

SAMPLES = 1 << 18  # src/eval/precision.h kOracleSamples

_MATMULS = None


def _matmuls():
    global _MATMULS
    if _MATMULS is None:
        F = torch.nn.functional
        _MATMULS = {F.linear, F.bilinear, torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.einsum,
                    torch.dot, torch.mv, torch.inner, torch.tensordot, torch.Tensor.matmul, torch.Tensor.__matmul__,
                    torch.Tensor.mm, torch.Tensor.bmm, torch.Tensor.dot, torch.Tensor.mv, F.conv1d, F.conv2d,
                    F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d}
    return _MATMULS


def _tf32(x):
    """x's fp32 values with the 13 low mantissa bits cleared: what a tensor core reads of an fp32 operand."""
    return (x.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32).view(x.shape)


class _RoundedOperands(TorchFunctionMode):
    """Operands of matmul-like operations rounded to a lower precision (the CPU's stand-in for TF32 / autocast)."""

    def __init__(self, level):
        super().__init__()
        self.level = level

    def _round(self, x):
        if not isinstance(x, _Tensor) or x.dtype != torch.float32:
            return x
        if self.level == "tf32":
            return _tf32(x)
        return x.to(torch.bfloat16 if self.level == "bf16" else torch.float16).float()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _matmuls():
            args = tuple(self._round(a) for a in args)
        return func(*args, **kwargs)


def _floats(values, dtype):
    return [v.to(dtype) if isinstance(v, _Tensor) and v.is_floating_point() else v for v in values]


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


class Oracle:
    """Built from the reference's class and constructor arguments, seeded like the reference (same weights)."""

    def __init__(self, r, init_args, init_seed):
        self.r = r
        self.error = None
        self.first = None  # (inputs, values, index) of the first trial with an oracle
        self.trials = 0  # default trials given an oracle so far
        try:
            seed_all(init_seed)
            with _no_grad():
                m = r.cls(*init_args)
            self.model = m.to(r.device).double()
            self.model.train(r.model.training)
        except BaseException as e:  # noqa: BLE001
            self.model, self.error = None, "the model cannot be built in float64: %s" % str(e)[:300]

    def samples(self, inputs, seed):
        """(values, index) lists, one item per output: float64 values at the sampled flat indices and the int64 indices
        (an empty index: every element, in order); None for an output that is not a floating tensor. ([], []) when
        the oracle failed (self.error says why)."""
        if self.model is None:
            return [], []
        try:
            with _no_grad():
                out = _as_list(self.model(*_floats(inputs, torch.float64)))
        except BaseException as e:  # noqa: BLE001
            self.error = "the model does not run in float64: %s" % str(e)[:300]
            self.model = None
            if self.r.device.startswith("cuda"):
                torch.cuda.empty_cache()
            return [], []
        g = torch.Generator(device=self.r.device if self.r.device.startswith("cuda") else "cpu")
        g.manual_seed(int(seed) % (1 << 62))
        values, index = [], []
        for o in out:
            if not isinstance(o, _Tensor) or not o.is_floating_point():
                values.append(None)
                index.append(None)
                continue
            flat = o.detach().reshape(-1)
            if flat.numel() <= SAMPLES:
                values.append(flat.to(torch.float64).cpu())
                index.append(torch.zeros(0, dtype=torch.int64))
            else:
                ix = torch.randint(0, flat.numel(), (SAMPLES,), generator=g, device=flat.device).sort().values
                values.append(flat[ix].to(torch.float64).cpu())
                index.append(ix.cpu())
        # Asked only of the reference's default trials, whose fp32 outputs are finite (correctness.py): an oracle that
        # is not (a model that looks its outputs up by its inputs' exact values, as kernel_simple's cases do, or one
        # that overflows in float64 only) judges nothing.
        if any(v is not None and not bool(torch.isfinite(v).all()) for v in values):
            self.error = "the model's float64 outputs are not finite where its float32 ones are"
            self.model = None
            return [], []
        return values, index

    def measure_levels(self, inputs, values, index):
        """Relative L2 errors of the reference against the oracle's `values` at `index` (samples() of these inputs), as
        it is ("fp32") and at lower precisions: {"fp32": [per output], "tf32": [...], "bf16": [...], "fp16": [...]};
        a level that fails is left out."""
        if not values:
            return {}
        levels = {}
        for level in ("fp32", "tf32", "bf16", "fp16"):
            try:
                out = _as_list(self._run_at(level, inputs))
            except BaseException:  # noqa: BLE001
                continue
            errs = []
            for o, v, ix in zip(out, values, index):
                if v is None or not isinstance(o, _Tensor):
                    errs.append(None)
                    continue
                flat = o.detach().reshape(-1).to(torch.float64).cpu()
                got = flat if ix.numel() == 0 else flat[ix]
                den = float((v * v).sum())
                num = float(((got - v) ** 2).sum())
                errs.append((num / den) ** 0.5 if den > 0 else num ** 0.5)
            levels[level] = errs
        return levels

    def _run_at(self, level, inputs):
        m = self.r.model
        with _no_grad():
            if level == "fp32":
                return m(*inputs)
            if not self.r.device.startswith("cuda"):
                with _RoundedOperands(level):
                    return m(*inputs)
            if level == "tf32":
                old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
                torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
                try:
                    return m(*inputs)
                finally:
                    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
            with torch.autocast("cuda", dtype=torch.bfloat16 if level == "bf16" else torch.float16):
                return m(*inputs)
