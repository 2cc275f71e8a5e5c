"""Causal attention in the three shapes the learner and the rollout engine need, on whatever torch is present.

  packed_causal   many sequences concatenated into one row (training micro-batches, prompt prefill): q (N, H, D),
                  k/v (N, Hkv, D), `cu_seqlens` (S+1,) int32 offsets. Each sequence attends causally to itself
                  only; no dense (N, N) mask is ever built. CUDA with torch.nn.attention.varlen: one FlashAttention
                  varlen kernel. Elsewhere (CPU, torch 1.13): one causal attention per sequence, each with its own
                  (T_i, T_i) triangle at most.
  Decode          one new token per cache slot against a static (contiguous) KV cache: q (B, H, D), the cache
                  k/v (slots, max_len, Hkv, D) already holding the new token, per-row used lengths. FlashAttention's
                  varlen kernel with per-row key lengths where it is present, else one masked
                  scaled_dot_product_attention call (the GQA group folded into the query axis, so no key is
                  repeated), or matmul-softmax on torch < 2. The rollout engine now decodes over pages
                  (paged_attention.py); this is the FlashAttention baseline bench/train/paged_decode_speed.py measures
                  the paged kernel against.
  padded_causal   right-padded rows (B, H, T, D): every real token sees only real tokens before it.

Grouped-query attention: query head h uses key/value head h // (H // Hkv), as in Qwen3.

`register_transformers_attention()` makes packed_causal available to transformers' models as the attention
implementation "kgym_packed": a packed forward passes cu_seq_lens_q / max_length_q keyword arguments (the names
transformers' own FlashAttention path reads) and attention_mask={"full_attention": None} (so transformers builds no
mask); a call without them (model.generate) is transformers' own SDPA attention.
"""
import inspect
import math

import torch
import torch.nn.functional as F

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def _varlen():
    """torch.nn.attention.varlen.varlen_attn and the keyword names this torch's version takes, or None."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except Exception:
        return None
    return varlen_attn, set(inspect.signature(varlen_attn).parameters)


_VARLEN = _varlen()


def repeat_kv(x, groups, dim):
    return x if groups == 1 else x.repeat_interleave(groups, dim=dim)


def padded_causal(q, k, v, scale=None):
    """(B, H, T, D) causal attention; k/v may have fewer heads (GQA)."""
    groups = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, groups, 1), repeat_kv(v, groups, 1)
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    return BlockCausal.apply(q.contiguous(), k.contiguous(), v.contiguous(), scale)


class BlockCausal(torch.autograd.Function):
    """Causal attention for torch without scaled_dot_product_attention (Debian's 1.13, CI's learner): query blocks
    against the key blocks at or before them, with a running (online) softmax, and a backward that recomputes each
    block's probabilities from the saved log-sum-exp. Memory O(T x block) instead of the (T x T) score, mask and
    probability matrices a plain softmax(QK^T)V keeps for autograd, and half the work (blocks above the diagonal are
    never touched). This is what made a 2-layer, 64-wide model take 30-40 s per SFT step on conversations of a few
    thousand tokens: at that width the T x T matrices are nearly all of the work."""

    BLOCK = 256

    @staticmethod
    def forward(ctx, q, k, v, scale):
        t, blk = q.shape[-2], BlockCausal.BLOCK
        out = torch.empty_like(q)
        lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
        for a in range(0, t, blk):
            b = min(a + blk, t)
            s = (q[..., a:b, :] @ k[..., :b, :].transpose(-1, -2)).float() * scale
            s[..., a:b] = s[..., a:b].masked_fill(_upper(b - a, q.device), float("-inf"))
            m = s.amax(-1, keepdim=True)
            p = torch.exp(s - m)
            l_ = p.sum(-1, keepdim=True)
            out[..., a:b, :] = ((p / l_).to(v.dtype) @ v[..., :b, :])
            lse[..., a:b] = (m + torch.log(l_))[..., 0]
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        scale, t, blk = ctx.scale, q.shape[-2], BlockCausal.BLOCK
        dout = dout.contiguous()
        dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        delta = (dout.float() * out.float()).sum(-1, keepdim=True)  # rowsum(dO * O)
        for a in range(0, t, blk):
            b = min(a + blk, t)
            s = (q[..., a:b, :] @ k[..., :b, :].transpose(-1, -2)).float() * scale
            s[..., a:b] = s[..., a:b].masked_fill(_upper(b - a, q.device), float("-inf"))
            p = torch.exp(s - lse[..., a:b, None])
            do = dout[..., a:b, :]
            dv[..., :b, :] += (p.transpose(-1, -2).to(v.dtype) @ do)
            dp = (do @ v[..., :b, :].transpose(-1, -2)).float()
            ds = (p * (dp - delta[..., a:b, :]) * scale).to(q.dtype)
            dq[..., a:b, :] += ds @ k[..., :b, :]
            dk[..., :b, :] += ds.transpose(-1, -2) @ q[..., a:b, :]
        return dq, dk, dv, None


def _upper(n, device):
    return torch.ones(n, n, dtype=torch.bool, device=device).triu(1)


def packed_causal(q, k, v, cu_seqlens, max_len, scale=None):
    """(N, H, D) output of per-sequence causal attention over packed sequences (see the module's docstring)."""
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if _VARLEN is not None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
        fn, names = _VARLEN
        groups = q.shape[1] // k.shape[1]
        kw = {}
        if "enable_gqa" in names:
            kw["enable_gqa"] = True
        else:
            k, v = repeat_kv(k, groups, 1), repeat_kv(v, groups, 1)
        if "is_causal" in names:
            kw["is_causal"] = True
        else:
            kw["window_size"] = (-1, 0)
        if "scale" in names:
            kw["scale"] = scale
        cu = cu_seqlens.to(device=q.device, dtype=torch.int32)
        return fn(q, k, v, cu, cu, int(max_len), int(max_len), **kw)
    out = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            seg = padded_causal(q[a:b].transpose(0, 1)[None], k[a:b].transpose(0, 1)[None],
                                v[a:b].transpose(0, 1)[None], scale)
            out[a:b] = seg[0].transpose(0, 1)
    return out


def _flash_decode_op():
    op = getattr(torch.ops.aten, "_flash_attention_forward", None)
    if op is None or "seqused_k" not in str(op.default._schema):
        return None
    return op.default


_FLASH_DECODE = _flash_decode_op()


class Decode:
    """One query per row against a token-major KV cache (slots, max_len, Hkv, D), reading only each row's
    `used` positions (the new token's key/value already written). Built once per engine: on CUDA with bf16/fp16 it
    probes FlashAttention's varlen kernel with per-row key lengths (seqused_k; the cache as one (slots x max_len)
    key sequence per row, so no position past a row's length is read and no mask exists), checks it against the
    masked SDPA on random data, and falls back to that SDPA (or matmul-softmax on torch < 2) otherwise."""

    def __init__(self, k_cache, heads, scale):
        self.scale = scale
        self.slots, self.max_len, self.kv_heads, self.head_dim = k_cache.shape
        self.heads = heads
        self.flash = False
        if _FLASH_DECODE is not None and k_cache.is_cuda and k_cache.dtype in (torch.float16, torch.bfloat16):
            self.flash = self._probe(k_cache.dtype, k_cache.device)
        self.backend = "flash-varlen" if self.flash else ("sdpa" if HAS_SDPA else "matmul")

    def __call__(self, q, k_cache, v_cache, used, length):
        """q (B, H, D); used (B,) int32 keys per row (<= length); returns (B, H, D)."""
        b = q.shape[0]
        if self.flash:
            cu_q = torch.arange(b + 1, dtype=torch.int32, device=q.device)
            cu_k = cu_q * self.max_len
            flat = (-1, self.kv_heads, self.head_dim)
            return _FLASH_DECODE(q, k_cache.view(flat), v_cache.view(flat), cu_q, cu_k, 1, length, 0.0, False, False,
                                 scale=self.scale, seqused_k=used)[0]
        return self._masked(q, k_cache[:b, :length], v_cache[:b, :length], used)

    def _masked(self, q, k, v, used):
        b, h, d = q.shape
        g = h // self.kv_heads
        qg = q.view(b, self.kv_heads, g, d)  # the query heads of one key/value head, as g query positions
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # (B, Hkv, L, D) views
        mask = (torch.arange(k.shape[2], device=q.device)[None, :] < used[:, None])[:, None, None, :]
        if HAS_SDPA:
            out = F.scaled_dot_product_attention(qg, k, v, attn_mask=mask, scale=self.scale)
        else:
            att = (qg @ k.transpose(-1, -2)) * self.scale
            out = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return out.reshape(b, h, d)

    def _probe(self, dtype, device):
        g = torch.Generator(device=device).manual_seed(0)
        shape = (4, 64, self.kv_heads, self.head_dim)
        k = torch.randn(shape, generator=g, device=device).to(dtype)
        v = torch.randn(shape, generator=g, device=device).to(dtype)
        q = torch.randn((3, self.heads, self.head_dim), generator=g, device=device).to(dtype)
        used = torch.tensor([5, 64, 33], dtype=torch.int32, device=device)
        saved = self.max_len
        try:
            self.max_len, self.flash = 64, True
            got = self(q, k, v, used, 64)
        except Exception:
            return False
        finally:
            self.max_len, self.flash = saved, False
        want = self._masked(q, k[:3], v[:3], used)
        return bool((got.float() - want.float()).abs().max() < 2e-2)


# ---- transformers ------------------------------------------------------------------------------------------------
PACKED_IMPL = "kgym_packed"


def _hf_packed_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature: query (1, H, N, D), key/value (1, Hkv, N, D) of a packed row."""
    cu = kwargs.get("cu_seq_lens_q")
    if cu is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      **kwargs)
    if query.shape[0] != 1:
        raise RuntimeError("the kgym_packed attention takes one packed row")
    out = packed_causal(query[0].transpose(0, 1), key[0].transpose(0, 1), value[0].transpose(0, 1), cu,
                        kwargs.get("max_length_q") or int((cu[1:] - cu[:-1]).max()), scaling)
    return out[None], None  # (1, N, H, D), as transformers' attention functions return


def register_transformers_attention():
    """Registers "kgym_packed" with transformers: the attention function above, and SDPA's mask function for the
    calls that are not packed."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    AttentionInterface.register(PACKED_IMPL, _hf_packed_attention)
    AttentionMaskInterface.register(PACKED_IMPL, sdpa_mask)
