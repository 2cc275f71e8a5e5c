"""The policy's decoder as the rollout engine runs it: one layer at a time, with the engine owning attention and the
KV cache. A view holds no weights of its own: every call goes through the live modules of the learner's model
(their parameters are the ones the optimizer updates in place), so the engine serves the current policy with no
copy and no synchronisation.

  embed(ids, positions) -> x                      ids/positions (B, T) -> the residual stream (B, T, hidden)
  rope(x, positions) -> r                         per-forward rotary tables (None for the tiny model)
  project(i, x, r) -> q, k, v                     layer i's (B, H, T, D) query and (B, Hkv, T, D) key/value,
                                                  normalised and rotated exactly as the model's own forward does
  project_parts(i, x) (Qwen3 only)                a decode step's q/k/v before their norms and rotation, and the
                                                  norms' weights: fused_project finishes them in one kernel
  finish(i, x, attn) -> x                         layer i's output projection, residual and MLP; attn (B, T, H*D)
  logits(x) -> (…, V)                             final norm and output head

For Qwen3 the pieces are the model's own modules (the projections, Qwen3MLP) and their weights, with two of its
operations written in fewer kernels, since a decode step is hundreds of tiny launches otherwise: RMSNorm as torch's
fused rms_norm (one kernel instead of seven; same formula, the weight applied before the cast to bf16 rather than
after), and the rotary embedding as q*cos + roll(q)*sin' with sin' = (-sin, sin) per half (three kernels instead of
five; the same arithmetic as transformers' rotate_half). Logits are computed with float32 output (fp32_logits), so
the engine's and the learner's log-probs do not both carry bf16's rounding of the logits (about 0.03 near 5).
"""
import torch
import torch.nn.functional as F

FUSED_RMS_NORM = hasattr(F, "rms_norm")


def rms_norm(x, module):
    """transformers' Qwen3RMSNorm `module` applied to x, as one fused kernel where torch has it."""
    if FUSED_RMS_NORM:
        return F.rms_norm(x, (x.shape[-1],), module.weight, module.variance_epsilon)
    return module(x)


class _Fp32Logits(torch.autograd.Function):
    """x (N, hidden) @ weight.T with float32 output from bf16/fp16 operands (cuBLAS accumulates in fp32 anyway;
    this keeps the result unrounded). Backward in the operands' dtype, as a bf16 matmul's would be."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.mm(x, weight.t(), out_dtype=torch.float32)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        g = g.to(x.dtype)
        return g @ weight, g.t() @ x


def fp32_logits(x, weight):
    """Float32 logits of hidden states x (…, hidden) under an output head `weight` (V, hidden)."""
    if x.is_cuda and x.dtype in (torch.bfloat16, torch.float16) and weight.dtype == x.dtype:
        try:
            flat = _Fp32Logits.apply(x.reshape(-1, x.shape[-1]), weight)
            return flat.view(*x.shape[:-1], weight.shape[0])
        except (RuntimeError, TypeError):  # a torch without mm(out_dtype=): bf16 logits, widened
            pass
    return F.linear(x, weight).float()


class TinyView:
    def __init__(self, model):
        self.m = model
        cfg = model.cfg
        self.layers = cfg["num_hidden_layers"]
        self.heads = self.kv_heads = cfg["num_attention_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        self.dtype = model.embed.weight.dtype

    def embed(self, ids, positions):
        return self.m.embed(ids) + self.m.pos(positions)

    def rope(self, x, positions):
        return None

    def project(self, i, x, r):
        return self.m.blocks[i].project(x)

    def finish(self, i, x, attn):
        return self.m.blocks[i].finish(x, attn)

    def logits(self, x):
        return fp32_logits(self.m.norm(x), self.m.lm_head.weight)


class Qwen3View:
    def __init__(self, model):
        self.m = model
        self.inner = model.model
        cfg = model.config
        self.layers = cfg.num_hidden_layers
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.dtype = model.lm_head.weight.dtype

    def embed(self, ids, positions):
        return self.inner.embed_tokens(ids)

    def rope(self, x, positions):
        """(cos, sin') of shape (B, 1, T, D): sin' negated on the first half (see the module's docstring)."""
        cos, sin = self.inner.rotary_emb(x, positions)
        half = sin.shape[-1] // 2
        return cos[:, None], torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)[:, None]

    def _rotate(self, t, r):
        cos, sin = r
        return torch.addcmul(t * cos, t.roll(t.shape[-1] // 2, dims=-1), sin)

    def project(self, i, x, r):
        layer = self.inner.layers[i]
        attn = layer.self_attn
        h = rms_norm(x, layer.input_layernorm)
        shape = (*h.shape[:-1], -1, self.head_dim)
        q = rms_norm(attn.q_proj(h).view(shape), attn.q_norm).transpose(1, 2)
        k = rms_norm(attn.k_proj(h).view(shape), attn.k_norm).transpose(1, 2)
        v = attn.v_proj(h).view(shape).transpose(1, 2)
        return self._rotate(q, r), self._rotate(k, r), v

    def project_parts(self, i, x):
        """A decode step's projections before their norms and rotation (fused_project does those): x (B, 1, hidden)
        -> q (B, H, D), k/v (B, Hkv, D), the q_norm and k_norm weights and their epsilon."""
        layer = self.inner.layers[i]
        attn = layer.self_attn
        h = rms_norm(x, layer.input_layernorm)
        b = h.shape[0]
        return (attn.q_proj(h).view(b, -1, self.head_dim), attn.k_proj(h).view(b, -1, self.head_dim),
                attn.v_proj(h).view(b, -1, self.head_dim), attn.q_norm.weight, attn.k_norm.weight,
                attn.q_norm.variance_epsilon)

    def finish(self, i, x, attn):
        layer = self.inner.layers[i]
        x = x + layer.self_attn.o_proj(attn)
        return x + layer.mlp(rms_norm(x, layer.post_attention_layernorm))

    def logits(self, x):
        return fp32_logits(rms_norm(x, self.inner.norm), self.m.lm_head.weight)


def view_of(policy):
    return TinyView(policy.model) if policy.arch == "tiny" else Qwen3View(policy.model)
