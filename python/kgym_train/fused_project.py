"""The tail of a decode step's projection in one Triton kernel: Qwen3's per-head RMSNorm of q and k, the rotary
embedding of both, and the new key/value written into their KV pages.

Why a kernel: in torch these are ~10 launches a layer (two norms, two rolls, four multiplies/addcmuls, two index
writes), each a few microseconds on tensors of a few kilobytes; at the 1.7 B shape they were ~0.8 ms of a 6.0 ms
decode step on an H100 (bench/results/2026-12-07-rl-shape-h100/decode_profile.json). torch has no fused op for them.

  norm_rope_write(q, k, v, qw, kw, eps, cos, sin, k_flat, v_flat, dest) -> q_out
      q (B, H, D), k/v (B, Hkv, D): the projections of one token per row (any strides, last dim contiguous);
      qw/kw (D,): the q_norm / k_norm weights; cos/sin (B, D): the rotary tables with sin's first half negated
      (decoder.Qwen3View.rope's sin'); k_flat/v_flat (rows, Hkv, D): a layer's pages viewed flat; dest (B,) long:
      the flat row each row's key/value goes to. Per head: x * rsqrt(mean(x^2) + eps) * w in float32, then
      x * cos + roll(x, D/2) * sin', rounded once to the model's dtype. Returns q_out (B, H, D); k and v land in
      their pages.
  reference(...)   the same in torch ops, as decoder.Qwen3View does it (F.rms_norm, then the rotation in the model's
                   dtype): the oracle of the tests and of the probe, and the path on CPU and in fp32.
  FusedProject(view, device)   on CUDA with a bf16/fp16 Qwen3 view, probes the kernel against `reference` and uses
                   it when they agree to the dtype's rounding; `.backend` is "triton-fused" or "torch".
"""
import os

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except Exception:
    triton = None

HAS_TRITON = triton is not None
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
# Largest |fused - reference| allowed, relative to the largest |reference| (at least 1): a few units of the last place,
# since the reference rounds its rotation to the dtype after each operation and the kernel once.
TOLERANCE = {torch.bfloat16: 2**-6, torch.float16: 2**-9, torch.float32: 1e-5}

if HAS_TRITON:
    @triton.jit
    def _norm_rope(x_ptr, w_ptr, cos, sin, eps, D: tl.constexpr):
        """One head: RMSNorm with weight w, then x * cos + roll(x, D/2) * sin (the partner loaded again)."""
        d = tl.arange(0, D)
        partner = (d + D // 2) % D
        x = tl.load(x_ptr + d).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, 0) / D + eps)
        xn = x * rstd * tl.load(w_ptr + d).to(tl.float32)
        xpn = tl.load(x_ptr + partner).to(tl.float32) * rstd * tl.load(w_ptr + partner).to(tl.float32)
        return xn * cos + xpn * sin

    @triton.jit
    def _project_kernel(q_ptr, k_ptr, v_ptr, qw_ptr, kw_ptr, cos_ptr, sin_ptr, kf_ptr, vf_ptr, dest_ptr, qo_ptr,
                        sq_b, sq_h, sk_b, sk_h, sv_b, sv_h, sc_b, sf_row, sf_h, so_b, so_h, eps,
                        H: tl.constexpr, D: tl.constexpr):
        row = tl.program_id(0)
        j = tl.program_id(1)
        d = tl.arange(0, D)
        cos = tl.load(cos_ptr + row * sc_b + d).to(tl.float32)
        sin = tl.load(sin_ptr + row * sc_b + d).to(tl.float32)
        if j < H:
            base = q_ptr + row * sq_b + j * sq_h
            out = _norm_rope(base, qw_ptr, cos, sin, eps, D)
            tl.store(qo_ptr + row * so_b + j * so_h + d, out.to(qo_ptr.dtype.element_ty))
        else:
            h = j - H
            base = k_ptr + row * sk_b + h * sk_h
            out = _norm_rope(base, kw_ptr, cos, sin, eps, D)
            at = tl.load(dest_ptr + row) * sf_row + h * sf_h
            tl.store(kf_ptr + at + d, out.to(kf_ptr.dtype.element_ty))
            tl.store(vf_ptr + at + d, tl.load(v_ptr + row * sv_b + h * sv_h + d))


def reference(q, k, v, qw, kw, eps, cos, sin, k_flat, v_flat, dest):
    """decoder.Qwen3View's projection tail in torch ops (see the module's docstring)."""
    d = q.shape[-1]
    c, s = cos[:, None, :].to(q.dtype), sin[:, None, :].to(q.dtype)

    def norm_rope(x, w):
        if hasattr(F, "rms_norm"):
            x = F.rms_norm(x, (d,), w, eps)
        else:
            x = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)
        return torch.addcmul(x * c, x.roll(d // 2, dims=-1), s)

    k_flat[dest] = norm_rope(k, kw)
    v_flat[dest] = v
    return norm_rope(q, qw)


def norm_rope_write(q, k, v, qw, kw, eps, cos, sin, k_flat, v_flat, dest):
    """See the module's docstring."""
    b, h, d = q.shape
    hkv = k.shape[1]
    out = torch.empty((b, h, d), dtype=q.dtype, device=q.device)
    cos, sin = cos.contiguous(), sin.contiguous()
    _project_kernel[(b, h + hkv)](q, k, v, qw, kw, cos, sin, k_flat, v_flat, dest, out,
                                  q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
                                  cos.stride(0), k_flat.stride(0), k_flat.stride(1), out.stride(0), out.stride(1),
                                  float(eps), H=h, D=d)
    return out


class FusedProject:
    def __init__(self, view, device):
        self.fused = False
        self.probe_error = None
        dtype = getattr(view, "dtype", torch.float32)
        if (HAS_TRITON and torch.device(device).type == "cuda" and hasattr(view, "project_parts")
                and dtype in (torch.bfloat16, torch.float16)):
            self.fused = self._probe(view.heads, view.kv_heads, view.head_dim, dtype, torch.device(device))
        self.backend = "triton-fused" if self.fused else "torch"

    def __call__(self, *args):
        return (norm_rope_write if self.fused else reference)(*args)

    def _probe(self, heads, kv_heads, dim, dtype, device):
        try:
            args, flats = probe_case(4, heads, kv_heads, dim, dtype, device)
            want_kf, want_vf = flats[0].clone(), flats[1].clone()
            want = reference(*args[:8], want_kf, want_vf, args[10])
            got = norm_rope_write(*args)
            err = max(float((got.float() - want.float()).abs().max()),
                      float((flats[0].float() - want_kf.float()).abs().max()),
                      float((flats[1].float() - want_vf.float()).abs().max()))
            self.probe_error = err
            return err <= TOLERANCE[dtype] * max(1.0, float(want.float().abs().max()))
        except Exception as e:
            self.probe_error = repr(e)
            return False


def probe_case(b, heads, kv_heads, dim, dtype, device, seed=0):
    """Random arguments of norm_rope_write (q/k/v as strided views of one projection, as a layer makes them) and the
    two flat page tensors they write into."""
    g = torch.Generator(device=device).manual_seed(seed)
    r = lambda *s: torch.randn(s, generator=g, device=device).to(dtype)  # noqa: E731
    qkv = r(b, (heads + 2 * kv_heads) * dim)
    q = qkv[:, :heads * dim].view(b, heads, dim)
    k = qkv[:, heads * dim:(heads + kv_heads) * dim].view(b, kv_heads, dim)
    v = qkv[:, (heads + kv_heads) * dim:].view(b, kv_heads, dim)
    qw, kw = 1 + 0.1 * r(dim), 1 + 0.1 * r(dim)
    ang = torch.rand((b, dim // 2), generator=g, device=device) * 6.28
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(dtype)
    sin = torch.cat([-ang.sin(), ang.sin()], -1).to(dtype)
    rows = 3 * b + 5
    k_flat, v_flat = torch.zeros((rows, kv_heads, dim), dtype=dtype, device=device), \
        torch.zeros((rows, kv_heads, dim), dtype=dtype, device=device)
    dest = torch.randperm(rows, generator=g, device=device)[:b]
    return (q, k, v, qw, kw, 1e-6, cos, sin, k_flat, v_flat, dest), (k_flat, v_flat)
