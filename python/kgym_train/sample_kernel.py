"""sampling.sample's unfiltered draw as one Triton kernel: one pass over each row's logits.

Why a kernel: sampling.sample builds its Gumbel noise as a (B, V) tensor through some fifteen elementwise kernels (the
hash's shifts, multiplies and masks, the two logs) and then takes log_softmax, argmax and the race's argmax, each a
full pass over (B, V) float32 in memory. At the 1.7 B shape (V = 151 936) that was ~0.7 ms of a 6.0 ms decode step
at batch 64 on an H100 (bench/results/2026-12-07-rl-shape-h100/decode_profile.json). torch has no sampler keyed by a
per-row seed and position (torch.multinomial draws from a generator's state), so this is written here, and checked
against sampling.sample.

  draw(logits, temp, seed, step, vocab) -> (tokens, logprobs)
      logits (B, V) float32 contiguous; temp (B,) float32; seed, step (B,) int64; vocab: ids >= vocab never drawn.
      Per row, over V in blocks: the running max and sum of exp for the log-sum-exp (the whole vocabulary, as the
      learner's log-probs), the greedy argmax over ids < vocab, and the race argmax of logit / max(temp, 1e-5) + g
      with g = -log(-log(u)), u from the same 32-bit hash of (seed, step, id) as sampling.gumbel (unsigned arithmetic:
      the same low 32 bits). token = race if temp > 0 else greedy (first index on ties, as torch.argmax);
      logprob = logit[token] - lse. No host synchronisation: capturable in a CUDA graph.
  Sampler(vocab, device)   on CUDA, probes draw against sampling.sample on random logits and uses it when the tokens
      agree (logs computed by another library may differ in the last bit, so a near-tie could part them: the probe
      asks for all of 64 rows x 3 temperatures) and the log-probs within 1e-4; otherwise, on CPU, and for filtered
      rows (top-k / top-p, which sort), sampling.sample. `.backend` is "triton-fused" or "torch".
"""
import os

import torch

from . import sampling

try:
    import triton
    import triton.language as tl
except Exception:
    triton = None

HAS_TRITON = triton is not None
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
BLOCK_V = 2048

if HAS_TRITON:
    @triton.jit
    def _mix32(h):
        h = h ^ (h >> 16)
        h = h * 0x7FEB352D
        h = h ^ (h >> 15)
        h = h * 0x2C1B3C6D
        return h ^ (h >> 16)

    @triton.jit
    def _draw_kernel(logits_ptr, stride, temp_ptr, seed_ptr, step_ptr, tok_ptr, lp_ptr, V, vocab,
                     BLOCK: tl.constexpr):
        row = tl.program_id(0)
        base = logits_ptr + row.to(tl.int64) * stride
        seed = tl.load(seed_ptr + row)
        step = tl.load(step_ptr + row)
        temp = tl.load(temp_ptr + row)
        lo = (seed & 0xFFFFFFFF).to(tl.uint32)
        hi = ((seed >> 32) & 0x7FFFFFFF).to(tl.uint32)
        key = _mix32(_mix32(lo ^ _mix32(hi + 0x51ED27)) ^ (step.to(tl.uint32) * 0x1E3779B9))
        t = tl.maximum(temp, 1e-5)
        offs = tl.arange(0, BLOCK)
        m = tl.full([BLOCK], float("-inf"), tl.float32)  # per-lane running max / sum of exp (lse)
        s = tl.zeros([BLOCK], tl.float32)
        gbest = tl.full([BLOCK], float("-inf"), tl.float32)  # per-lane best greedy value / id
        gidx = tl.zeros([BLOCK], tl.int32)
        rbest = tl.full([BLOCK], float("-inf"), tl.float32)  # per-lane best race value / id
        ridx = tl.zeros([BLOCK], tl.int32)
        for start in range(0, V, BLOCK):
            ids = start + offs
            x = tl.load(base + ids, mask=ids < V, other=float("-inf"))
            m_new = tl.maximum(m, x)
            safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a lane that has seen no logit yet stays at 0
            s = s * tl.exp(m - safe) + tl.exp(x - safe)
            m = m_new
            ok = ids < vocab
            h = _mix32(key ^ _mix32(ids.to(tl.uint32) * 0x1E3779B9 + 1))
            u = ((h >> 8).to(tl.float32) + 0.5) * (1.0 / 16777216.0)
            race = tl.where(ok, x / t - tl.log(-tl.log(u)), float("-inf"))
            xg = tl.where(ok, x, float("-inf"))
            better = xg > gbest  # strict: an earlier block keeps a tie, as argmax keeps the first index
            gidx = tl.where(better, ids, gidx)
            gbest = tl.where(better, xg, gbest)
            better = race > rbest
            ridx = tl.where(better, ids, ridx)
            rbest = tl.where(better, race, rbest)
        mx = tl.max(m, 0)
        lse = mx + tl.log(tl.sum(s * tl.exp(m - mx), 0))
        g_top = tl.max(gbest, 0)
        g_tok = tl.min(tl.where(gbest == g_top, gidx, 2147483647), 0)  # the first id among the lanes' maxima
        r_top = tl.max(rbest, 0)
        r_tok = tl.min(tl.where(rbest == r_top, ridx, 2147483647), 0)
        tok = tl.where(temp > 0, r_tok, g_tok)
        tl.store(tok_ptr + row, tok.to(tl.int64))
        tl.store(lp_ptr + row, tl.load(base + tok) - lse)


def draw(logits, temp, seed, step, vocab):
    """See the module's docstring."""
    b, v = logits.shape
    logits = logits.contiguous()
    tok = torch.empty(b, dtype=torch.long, device=logits.device)
    lp = torch.empty(b, dtype=torch.float32, device=logits.device)
    _draw_kernel[(b,)](logits, logits.stride(0), temp.contiguous(), seed.contiguous(), step.contiguous(), tok, lp,
                       v, int(vocab), BLOCK=BLOCK_V)
    return tok, lp


class Sampler:
    def __init__(self, vocab, device):
        self.vocab = int(vocab)
        self.vkeys = sampling.vocab_keys(self.vocab, device)
        self.fused = False
        self.probe_error = None
        if HAS_TRITON and torch.device(device).type == "cuda":
            self.fused = self._probe(torch.device(device))
        self.backend = "triton-fused" if self.fused else "torch"

    def __call__(self, logits, temp, top_k, top_p, seed, step, filtered):
        """sampling.sample's arguments (vkeys aside); the fused kernel for an unfiltered step."""
        if self.fused and not filtered:
            return draw(logits, temp, seed, step, self.vocab)
        return sampling.sample(logits, temp, top_k, top_p, seed, step, self.vkeys, filtered)

    def _probe(self, device):
        g = torch.Generator(device=device).manual_seed(0)
        b, v = 64, self.vocab + 37
        try:
            for t in (0.0, 0.7, 1.0):
                logits = torch.randn((b, v), generator=g, device=device) * 3
                temp = torch.full((b,), t, device=device)
                seed = torch.randint(0, 2**62, (b,), generator=g, device=device)
                step = torch.randint(0, 4096, (b,), generator=g, device=device)
                none = torch.zeros(b, dtype=torch.long, device=device)
                want = sampling.sample(logits, temp, none, torch.ones_like(temp), seed, step, self.vkeys, False)
                got = draw(logits, temp, seed, step, self.vocab)
                err = float((got[1] - want[1]).abs().max())
                same = bool((got[0] == want[0]).all())
                self.probe_error = {"temperature": t, "tokens_equal": same, "logprob_error": err}
                if not same or err > 1e-4:
                    return False
        except Exception as e:  # a Triton that cannot build the kernel here: the torch path
            self.probe_error = repr(e)
            return False
        return True
