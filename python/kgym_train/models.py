"""The policy: a causal LM behind one interface, whichever engine holds it.

  qwen3  transformers' Qwen3ForCausalLM: from a checkpoint folder (AutoModelForCausalLM.from_pretrained, the
         real DR.Kernel-8B path) or random-initialised from a Qwen3Config (model.init) for experiments here.
  tiny   TinyCausalLM below, pure torch (runs on torch 1.13 without transformers, as on Debian's CI): a pre-norm
         decoder with RMSNorm, causal multi-head attention and a SiLU MLP. Same interface, same checkpoint files.

Policy.logits(input_ids, attention_mask) -> (B, T, V) logits; Policy.generate(prompts, ...) samples
continuations of left-padded prompts and returns, per prompt, the sampled ids and the log-probability of each
under the unmodified policy (temperature 1, no top-p), which is what MRS compares with the learner's.
Checkpoints: a folder with config.json and model.safetensors (save_pretrained for qwen3), loadable by
`Policy.load` and, for qwen3, by AutoModelForCausalLM.from_pretrained.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from . import attention
from .decoder import fp32_logits

TINY_ARCH = "kgym_tiny_causal_lm"


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


class TinyBlock(nn.Module):
    def __init__(self, hidden, heads, inter):
        super().__init__()
        self.heads = heads
        self.norm1 = RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.proj = nn.Linear(hidden, hidden, bias=False)
        self.norm2 = RMSNorm(hidden)
        self.gate = nn.Linear(hidden, inter, bias=False)
        self.up = nn.Linear(hidden, inter, bias=False)
        self.down = nn.Linear(inter, hidden, bias=False)

    def project(self, x):
        """(q, k, v), each (B, heads, T, head_dim), of the residual stream x (B, T, hidden)."""
        b, t, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        return q, k, v

    def finish(self, x, attn):
        """The residual stream after this block, given its attention output attn (B, T, hidden)."""
        x = x + self.proj(attn)
        z = self.norm2(x)
        return x + self.down(F.silu(self.gate(z)) * self.up(z))

    def forward(self, x, bias):
        b, t, h = x.shape
        q, k, v = self.project(x)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(h // self.heads) + bias
        return self.finish(x, (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h))

    def forward_packed(self, x, cu_seqlens, max_len):
        """x (1, N, hidden): the sequences of a packed row, each attending causally to itself only."""
        q, k, v = self.project(x)
        y = attention.packed_causal(q[0].transpose(0, 1), k[0].transpose(0, 1), v[0].transpose(0, 1), cu_seqlens,
                                    max_len)
        return self.finish(x, y.reshape(1, x.shape[1], x.shape[2]))


class TinyCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        hidden, vocab = cfg["hidden_size"], cfg["vocab_size"]
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(cfg["max_position_embeddings"], hidden)
        self.blocks = nn.ModuleList(TinyBlock(hidden, cfg["num_attention_heads"], cfg["intermediate_size"])
                                    for _ in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        if cfg.get("tie_word_embeddings", True):
            self.lm_head.weight = self.embed.weight
        gen = torch.Generator().manual_seed(int(cfg.get("init_seed", 0)))
        for p in self.parameters():
            if p.dim() > 1:
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02)

    def forward(self, input_ids=None, attention_mask=None, pack=None, select=None):
        """Logits (B, T, V) of left- or right-padded rows, or, given a packing.Pack, the logits of its positions
        `select` (the root call FSDP2 needs: its hooks run on forward)."""
        if pack is not None:
            return self.lm_head(self.hidden_packed(pack.ids, pack.positions, pack.cu_seqlens, pack.max_len)[select])
        b, t = input_ids.shape
        mask = attention_mask.bool()
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        x = self.embed(input_ids) + self.pos(positions)
        causal = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril()
        allowed = causal[None, None] & mask[:, None, None, :]
        allowed = allowed | torch.eye(t, dtype=torch.bool, device=input_ids.device)[None, None]  # pads see themselves
        bias = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill(~allowed, float("-inf"))
        for blk in self.blocks:
            x = blk(x, bias)
        return self.lm_head(self.norm(x))

    def hidden_packed(self, input_ids, positions, cu_seqlens, max_len, checkpoint=False):
        """The final hidden states (N, hidden) of packed sequences: input_ids and positions (N,), positions
        restarting at 0 at every offset of cu_seqlens."""
        x = (self.embed(input_ids) + self.pos(positions))[None]
        for blk in self.blocks:
            if checkpoint and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(blk.forward_packed, x, cu_seqlens, max_len,
                                                      use_reentrant=False)
            else:
                x = blk.forward_packed(x, cu_seqlens, max_len)
        return self.norm(x)[0]


def transformers_available():
    try:
        from transformers import Qwen3Config, Qwen3ForCausalLM  # noqa: F401
        return True
    except Exception:
        return False


class Policy:
    """The model, its device and how to run it. `arch` is "qwen3" or "tiny"."""

    def __init__(self, model, arch, device):
        self.model = model
        self.arch = arch
        self.device = torch.device(device)
        self.checkpointing = False  # activation checkpointing of the decoder layers in training forwards
        if arch == "qwen3":
            attention.register_transformers_attention()
            model.config._attn_implementation = attention.PACKED_IMPL

    def enable_checkpointing(self):
        self.checkpointing = True
        if self.arch == "qwen3":
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

    # ---- construction -------------------------------------------------------------------------------------------
    @staticmethod
    def create(init, vocab_size, pad_id, device, dtype="fp32"):
        """A random-initialised policy from `init` (model.init of the config); vocab_size from the tokenizer."""
        arch = init.get("arch", "auto")
        if arch == "auto":
            arch = "qwen3" if transformers_available() else "tiny"
        cfg = {k: v for k, v in init.items() if k not in ("arch", "seed")}
        cfg["vocab_size"] = max(int(vocab_size), int(init.get("vocab_size") or 0))  # padded past the tokenizer
        torch.manual_seed(int(init.get("seed", 0)))
        if arch == "qwen3":
            from transformers import Qwen3Config, Qwen3ForCausalLM
            cfg.setdefault("pad_token_id", pad_id)
            with torch.device(device):  # initialised where it runs: a 1.7 B model in seconds, not minutes
                model = Qwen3ForCausalLM(Qwen3Config(**cfg))
        elif arch == "tiny":
            cfg["init_seed"] = int(init.get("seed", 0))
            model = TinyCausalLM(cfg)
        else:
            raise ValueError(f"model.init.arch must be auto, qwen3 or tiny, got {arch!r}")
        return Policy(model.to(_dtype(dtype)).to(device), arch, device)

    @staticmethod
    def load(path, device, dtype="fp32"):
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        if cfg.get("architectures") == [TINY_ARCH]:
            from safetensors.torch import load_file
            model = TinyCausalLM(cfg["kgym_config"])
            state = load_file(os.path.join(path, "model.safetensors"))
            if "lm_head.weight" not in state and model.cfg.get("tie_word_embeddings", True):
                state["lm_head.weight"] = state["embed.weight"]
            model.load_state_dict(state)
            return Policy(model.to(_dtype(dtype)).to(device), "tiny", device)
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained(path, dtype=_dtype(dtype))
        return Policy(model.to(device), "qwen3", device)

    def save(self, path):
        os.makedirs(path, exist_ok=True)
        if self.arch == "tiny":
            from safetensors.torch import save_file
            state = {k: v.detach().contiguous().cpu() for k, v in self.model.state_dict().items()}
            if self.model.cfg.get("tie_word_embeddings", True):
                state.pop("lm_head.weight", None)
            save_file(state, os.path.join(path, "model.safetensors"))
            with open(os.path.join(path, "config.json"), "w") as f:
                json.dump({"architectures": [TINY_ARCH], "kgym_config": self.model.cfg}, f, indent=2)
        else:
            self.model.save_pretrained(path, safe_serialization=True)

    def load_weights(self, path):
        """Replaces the weights in place from a checkpoint folder of the same architecture."""
        other = Policy.load(path, "cpu", dtype="fp32")
        with torch.no_grad():
            mine = dict(self.model.named_parameters())
            for name, p in other.model.named_parameters():
                if name not in mine or mine[name].shape != p.shape:
                    raise ValueError(f"{path}: parameter {name} does not match the served model")
                mine[name].copy_(p.to(mine[name].dtype))

    def vocab_size(self):
        return self.model.lm_head.weight.shape[0] if self.arch == "tiny" else self.model.config.vocab_size

    def num_parameters(self):
        return sum(p.numel() for p in self.model.parameters())

    # ---- running -------------------------------------------------------------------------------------------------
    def packed_hidden(self, pack, select):
        """(h, head) for packing.token_logprobs: the final hidden states at packed positions `select` and the output
        head that turns them into logits. A model sharded by FSDP2 runs its root forward (its hooks gather the
        root's parameters) and returns the selected logits with an identity head."""
        if _is_fsdp(self.model):
            if self.arch == "tiny":
                return self.model(pack=pack, select=select), _identity
            logits = self.model(input_ids=pack.ids[None], position_ids=pack.positions[None], use_cache=False,
                                logits_to_keep=select, **_hf_packed_kwargs(pack)).logits[0]
            return logits, _identity
        if self.arch == "tiny":
            h = self.model.hidden_packed(pack.ids, pack.positions, pack.cu_seqlens, pack.max_len, self.checkpointing)
        else:
            h = self.model.model(input_ids=pack.ids[None], position_ids=pack.positions[None], use_cache=False,
                                 **_hf_packed_kwargs(pack)).last_hidden_state[0]
        return h[select], OutputHead(self.model.lm_head.weight)

    def logits(self, input_ids, attention_mask):
        if self.arch == "tiny":
            return self.model(input_ids, attention_mask)
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        return self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions,
                          use_cache=False).logits

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens, stop_ids, pad_id, temperature=1.0, top_p=1.0, top_k=0, seed=None,
                 all_done=None):
        """Samples a continuation of each prompt (lists of ids). temperature 0 = greedy. Returns, per prompt,
        (ids, logprobs, finish_reason) with the stop token included in ids when it was produced. `all_done`
        (sharded learners, distributed.py): called with this process's "all my rows stopped" after each token,
        true when every rank's have; the loop runs until then, as every forward is a collective."""
        if seed is not None:
            torch.manual_seed(int(seed))
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
            mask[i, width - len(p):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        self.model.eval()
        if self.arch == "tiny":
            new, raw = self._sample_loop(ids, mask, max_new_tokens, stop_ids, pad_id, temperature, top_p, top_k,
                                         all_done)
        else:
            new, raw = self._hf_generate(ids, mask, max_new_tokens, stop_ids, pad_id, temperature, top_p, top_k,
                                         all_done is not None)
        return _finish(new, raw, stop_ids)

    def _hf_generate(self, ids, mask, max_new, stop_ids, pad_id, temperature, top_p, top_k, synced=False):
        sample = temperature > 0
        kwargs = dict(do_sample=sample, max_new_tokens=max_new, eos_token_id=list(stop_ids), pad_token_id=pad_id,
                      output_logits=True, return_dict_in_generate=True)
        if synced:
            kwargs["synced_gpus"] = True
        if sample:
            kwargs.update(temperature=temperature, top_p=top_p, top_k=top_k if top_k > 0 else 0)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        out = self.model.generate(input_ids=ids, attention_mask=mask, **kwargs)
        new = out.sequences[:, ids.shape[1]:]
        raw = torch.stack(out.logits, dim=1) if out.logits else torch.zeros(new.shape + (1,), device=new.device)
        return new, raw

    def _sample_loop(self, ids, mask, max_new, stop_ids, pad_id, temperature, top_p, top_k, all_done=None):
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        stops = torch.tensor(list(stop_ids), device=ids.device)
        new, raw = [], []
        for _ in range(max_new):
            logits = self.logits(ids, mask)[:, -1, :].float()
            token = sample_token(logits, temperature, top_p, top_k)
            token = torch.where(done, torch.full_like(token, pad_id), token)
            new.append(token)
            raw.append(logits)
            ids = torch.cat([ids, token[:, None]], 1)
            mask = torch.cat([mask, (~done).long()[:, None]], 1)
            done = done | (token[:, None] == stops[None, :]).any(-1)
            if (all_done(bool(done.all())) if all_done is not None else bool(done.all())):
                break
        return torch.stack(new, 1), torch.stack(raw, 1)


def _identity(x):
    return x


class OutputHead:
    """The output head as packing.token_logprobs calls it: float32 logits (decoder.fp32_logits)."""

    def __init__(self, weight):
        self.weight = weight

    def __call__(self, h):
        return fp32_logits(h, self.weight)


def _is_fsdp(model):
    return type(model).__name__.startswith("FSDP")


def _hf_packed_kwargs(pack):
    """A transformers model's keyword arguments for a packed forward (attention.py's kgym_packed)."""
    return {"attention_mask": {"full_attention": None, "sliding_attention": None},
            "cu_seq_lens_q": pack.cu_seqlens, "cu_seq_lens_k": pack.cu_seqlens,
            "max_length_q": pack.max_len, "max_length_k": pack.max_len}


def sample_token(logits, temperature, top_p, top_k):
    """One token per row of (B, V) float logits: greedy at temperature 0, else top-k / nucleus sampling."""
    if temperature <= 0:
        return logits.argmax(-1)
    scores = logits / temperature
    if top_k > 0:
        kth = torch.topk(scores, min(top_k, scores.shape[-1]), dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p < 1.0:
        sorted_scores, order = scores.sort(-1, descending=True)
        cum = sorted_scores.softmax(-1).cumsum(-1)
        drop = cum - sorted_scores.softmax(-1) > top_p  # keep the smallest prefix whose mass reaches top_p
        scores = scores.scatter(-1, order, sorted_scores.masked_fill(drop, float("-inf")))
    return torch.multinomial(scores.softmax(-1), 1)[:, 0]


def _finish(new, raw, stop_ids):
    logp = torch.log_softmax(raw.float(), dim=-1)
    stops = set(int(s) for s in stop_ids)
    out = []
    new_l = new.tolist()
    for i, row in enumerate(new_l):
        toks, lps, reason = [], [], "length"
        for j, tok in enumerate(row):
            toks.append(tok)
            lps.append(float(logp[i, j, tok]))
            if tok in stops:
                reason = "stop"
                break
        out.append((toks, lps, reason))
    return out


def _dtype(name):
    return {"fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
            "fp16": torch.float16}[name]
