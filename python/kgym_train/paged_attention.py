"""Attention of one decode step over a paged KV cache (pages shared between the n samples of one prompt).

Contract (every function here):
  q            (B, H, D)                 the query of each row's one new token, model dtype (bf16 / fp16 / fp32)
  k_pages      (num_pages, P, Hkv, D)    physical key pages, P tokens each, same dtype; last dim contiguous
  v_pages      (num_pages, P, Hkv, D)    physical value pages
  block_table  (rows >= B, cols) int32   row b's logical page j is physical page block_table[b, j]
  used         (B,) int32                keys of row b (>= 1): positions 0..used-1, the new token's already written
  pages        python int                block-table columns to consider (used[b] <= pages * P for every row): a
                                         static bucket, so launch grids depend on shapes and Python ints only
  scale        float
  returns      (B, H, D) in q's dtype; query head h reads key/value head h // (H // Hkv) (GQA, as Qwen3).
Rows may share physical pages. A row's block-table entries past its used pages may hold anything: they are never
used to address memory (the kernel masks their loads; the reference replaces them with page 0 and masks it out).

  reference      pure torch (torch 1.13 CPU and torch 2.x CUDA): gather each row's pages, mask positions >= used,
                 softmax in fp32.
  paged_decode   Triton, split-KV ("flash-decoding"): grid (B, Hkv, splits). A program takes all G = H / Hkv query
                 heads of its key/value head, so each key/value token is read once per key/value head, not once per
                 query head; it walks its split's tokens BLOCK_N at a time, looks each token's physical page up in
                 block_table, and keeps an online softmax in fp32 (base-2, the scale folded into log2(e)). It writes
                 the normalised partial output and its log-sum-exp; a second small kernel merges the splits. With one
                 split the first kernel writes the result directly and the merge is skipped.
                 Products use tl.dot with the G query rows padded to BLOCK_G = 16 (tl.dot needs every dimension >= 16):
                 the padding wastes tensor-core work, not memory traffic, and decode is bound by the key/value bytes;
                 the alternative (broadcast multiply + tl.sum) builds a (G, BLOCK_N, D) product in registers.
                 fp32 inputs use input_precision "ieee" (tf32 would cost ~1e-3 of accuracy for nothing).
                 No host synchronisation, no data-dependent Python control flow, workspaces from torch.empty: a call
                 can be captured in a CUDA graph. Splits come from (B, Hkv, pages) via choose_splits.
  PagedDecode    built once per engine: on CUDA it probes paged_decode against reference on random data (shared pages,
                 ragged lengths, stale block-table entries, one split and several) and uses it if they agree;
                 otherwise, and on CPU, reference. `.backend` is "triton-paged" or "reference".

Triton's CPU interpreter (TRITON_INTERPRET=1) runs paged_decode on CPU tensors (that is how CI tests it). Triton
3.0's interpreter multiplies bf16 operands of tl.dot as their raw 16-bit patterns, so under the interpreter bf16
operands are widened to fp32 before each tl.dot (UPCAST); compiled kernels multiply bf16 directly.
"""
import math
import os

import torch

try:
    import triton
    import triton.language as tl
except Exception:  # no Triton: reference only
    triton = None

HAS_TRITON = triton is not None
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
BLOCK_G = 16  # query rows of one tl.dot: the G heads of a key/value head, zero-padded
DEFAULT_SMS = 132  # H100 SXM; the real count is read from the device where there is one
MAX_SPLITS = 32
MIN_SPLIT_TOKENS = 256  # a split shorter than this costs more in merging than it gains in parallelism
_LOG2E = 1.4426950408889634


def reference(q, k_pages, v_pages, block_table, used, pages, scale):
    """Paged decode attention in plain torch (see the module's docstring)."""
    b, h, d = q.shape
    page_size, kv_heads = k_pages.shape[1], k_pages.shape[2]
    g = h // kv_heads
    length = pages * page_size
    cols = torch.arange(pages, device=q.device)
    live_page = cols[None, :] * page_size < used[:, None].long()  # (B, pages)
    table = block_table[:b, :pages].long().masked_fill(~live_page, 0)  # stale entries never index memory
    k = k_pages[table].reshape(b, length, kv_heads, d).permute(0, 2, 3, 1).float()  # (B, Hkv, D, L)
    v = v_pages[table].reshape(b, length, kv_heads, d).transpose(1, 2).float()  # (B, Hkv, L, D)
    qg = q.reshape(b, kv_heads, g, d).float()  # the G query heads of a key/value head as G query positions
    s = (qg @ k) * scale  # (B, Hkv, G, L)
    live = torch.arange(length, device=q.device)[None, :] < used[:, None].long()
    s = s.masked_fill(~live[:, None, None, :], float("-inf"))
    return (s.softmax(-1) @ v).reshape(b, h, d).to(q.dtype)


def choose_splits(batch, kv_heads, pages, page_size, sms=DEFAULT_SMS, block_n=64):
    """Splits of each row's keys: enough programs for ~4 per SM when B x Hkv alone is fewer, never a split shorter
    than MIN_SPLIT_TOKENS or a block, at most MAX_SPLITS; one split once B x Hkv fills the card."""
    programs = batch * kv_heads
    target = 4 * sms
    if programs >= target:
        return 1
    tokens = pages * page_size
    longest = max(1, tokens // max(MIN_SPLIT_TOKENS, block_n))
    return max(1, min(-(-target // programs), longest, MAX_SPLITS))


def _split_plan(pages, page_size, splits, block_n):
    """(tokens per split, a multiple of block_n; splits actually launched, none of them empty of columns)."""
    tokens = pages * page_size
    chunk = -(-tokens // (splits * block_n)) * block_n
    return chunk, -(-tokens // chunk)


if HAS_TRITON:
    @triton.jit
    def _split_kernel(q_ptr, k_ptr, v_ptr, table_ptr, used_ptr, o_ptr, lse_ptr,
                      sq_b, sq_h, sk_page, sk_tok, sk_head, sv_page, sv_tok, sv_head, st_row,
                      so_b, so_s, so_h, sl_b, sl_s, qk_scale, chunk,
                      G: tl.constexpr, BLOCK_G: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
                      BLOCK_N: tl.constexpr, UPCAST: tl.constexpr, PREC: tl.constexpr, STORE_LSE: tl.constexpr):
        """One (row, key/value head, split): the G query heads over tokens [split * chunk, min(+chunk, used))."""
        row = tl.program_id(0)
        kvh = tl.program_id(1)
        split = tl.program_id(2)
        g = tl.arange(0, BLOCK_G)
        d = tl.arange(0, D)
        n = tl.arange(0, BLOCK_N)
        heads = kvh * G + g
        q = tl.load(q_ptr + row * sq_b + heads[:, None] * sq_h + d[None, :], mask=g[:, None] < G, other=0.0)
        if UPCAST:
            q = q.to(tl.float32)
        used = tl.load(used_ptr + row)
        lo = split * chunk
        hi = tl.minimum(lo + chunk, used)
        m = tl.full([BLOCK_G], float("-inf"), tl.float32)
        l = tl.zeros([BLOCK_G], tl.float32)
        acc = tl.zeros([BLOCK_G, D], tl.float32)
        for start in range(lo, hi, BLOCK_N):
            t = start + n
            live = t < hi
            page = tl.load(table_ptr + row * st_row + t // PAGE, mask=live, other=0).to(tl.int64)
            slot = t % PAGE
            kt = tl.load(k_ptr + page[None, :] * sk_page + slot[None, :] * sk_tok + kvh * sk_head + d[:, None],
                         mask=live[None, :], other=0.0)  # (D, BLOCK_N)
            v = tl.load(v_ptr + page[:, None] * sv_page + slot[:, None] * sv_tok + kvh * sv_head + d[None, :],
                        mask=live[:, None], other=0.0)  # (BLOCK_N, D)
            if UPCAST:
                kt = kt.to(tl.float32)
                v = v.to(tl.float32)
            s = tl.dot(q, kt, input_precision=PREC) * qk_scale
            s = tl.where(live[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp2(m - m_new)
            p = tl.exp2(s - m_new[:, None])
            l = l * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC)
            m = m_new
        has = l > 0.0  # false only for a split that starts at or past `used`
        out = acc / tl.where(has, l, 1.0)[:, None]
        tl.store(o_ptr + row * so_b + split * so_s + heads[:, None] * so_h + d[None, :], out, mask=g[:, None] < G)
        if STORE_LSE:
            lse = tl.where(has, m + tl.log2(tl.where(has, l, 1.0)), float("-inf"))
            tl.store(lse_ptr + row * sl_b + split * sl_s + heads, lse, mask=g < G)

    @triton.jit
    def _merge_kernel(o_ptr, lse_ptr, out_ptr, so_b, so_s, so_h, sl_b, sl_s, sout_b, sout_h, splits,
                      D: tl.constexpr, BLOCK_S: tl.constexpr):
        """One (row, query head): the splits' partial outputs weighted by exp2(lse - max lse)."""
        row = tl.program_id(0)
        h = tl.program_id(1)
        s = tl.arange(0, BLOCK_S)
        d = tl.arange(0, D)
        lse = tl.load(lse_ptr + row * sl_b + s * sl_s + h, mask=s < splits, other=float("-inf"))
        w = tl.exp2(lse - tl.max(lse, 0))
        o = tl.load(o_ptr + row * so_b + s[:, None] * so_s + h * so_h + d[None, :], mask=(s < splits)[:, None],
                    other=0.0)
        out = tl.sum(w[:, None] * o, 0) / tl.sum(w, 0)
        tl.store(out_ptr + row * sout_b + h * sout_h + d, out)


def _next_pow2(x):
    return 1 << max(0, (int(x) - 1).bit_length())


def paged_decode(q, k_pages, v_pages, block_table, used, pages, scale, splits=None, block_n=64, sms=DEFAULT_SMS):
    """The Triton path (see the module's docstring); `splits` None: choose_splits. Raises ValueError on shapes the
    kernel does not take (head_dim not a power of two >= 16, G > BLOCK_G, a non-contiguous last dimension)."""
    b, h, d = q.shape
    page_size, kv_heads = k_pages.shape[1], k_pages.shape[2]
    g = h // kv_heads
    if d < 16 or d != _next_pow2(d) or g > BLOCK_G or h != g * kv_heads or block_n < 16 or \
            block_n != _next_pow2(block_n):
        raise ValueError(f"paged_decode takes head_dim a power of two >= 16 and <= {BLOCK_G} query heads per "
                         f"key/value head (got H {h}, Hkv {kv_heads}, D {d}, block_n {block_n})")
    if q.stride(2) != 1 or k_pages.stride(3) != 1 or v_pages.stride(3) != 1:
        raise ValueError("paged_decode needs the head dimension contiguous")
    if splits is None:
        splits = choose_splits(b, kv_heads, pages, page_size, sms, block_n)
    chunk, splits = _split_plan(pages, page_size, max(1, int(splits)), block_n)
    out = torch.empty((b, h, d), dtype=q.dtype, device=q.device)
    upcast = INTERPRET and q.dtype == torch.bfloat16
    prec = "ieee" if q.dtype == torch.float32 else "tf32"
    common = dict(G=g, BLOCK_G=BLOCK_G, D=d, PAGE=page_size, BLOCK_N=block_n, UPCAST=upcast, PREC=prec)
    args = (q, k_pages, v_pages, block_table, used)
    strides = (q.stride(0), q.stride(1), k_pages.stride(0), k_pages.stride(1), k_pages.stride(2),
               v_pages.stride(0), v_pages.stride(1), v_pages.stride(2), block_table.stride(0))
    qk_scale = float(scale) * _LOG2E
    if splits == 1:
        _split_kernel[(b, kv_heads, 1)](*args, out, out, *strides, out.stride(0), 0, out.stride(1), 0, 0,
                                        qk_scale, chunk, STORE_LSE=False, **common)
        return out
    part = torch.empty((b, splits, h, d), dtype=torch.float32, device=q.device)
    lse = torch.empty((b, splits, h), dtype=torch.float32, device=q.device)
    _split_kernel[(b, kv_heads, splits)](*args, part, lse, *strides, part.stride(0), part.stride(1), part.stride(2),
                                         lse.stride(0), lse.stride(1), qk_scale, chunk, STORE_LSE=True, **common)
    _merge_kernel[(b, h)](part, lse, out, part.stride(0), part.stride(1), part.stride(2), lse.stride(0),
                          lse.stride(1), out.stride(0), out.stride(1), splits, D=d, BLOCK_S=max(2, _next_pow2(splits)))
    return out


_TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


class PagedDecode:
    """Decode attention over a paged cache for one engine's shape: `__call__(q, k_pages, v_pages, block_table, used,
    pages)` (see the module's docstring). The Triton kernel where it is present, on CUDA, and agrees with reference
    on the probe; reference otherwise."""

    def __init__(self, heads, kv_heads, head_dim, page_size, dtype, device, scale=None):
        self.heads, self.kv_heads, self.head_dim, self.page_size = heads, kv_heads, head_dim, page_size
        self.dtype, self.device = dtype, torch.device(device)
        self.scale = scale if scale is not None else 1.0 / math.sqrt(head_dim)
        self.sms = DEFAULT_SMS
        self.triton = False
        self.probe_error = None
        if HAS_TRITON and self.device.type == "cuda" and dtype in _TOLERANCE:
            self.sms = torch.cuda.get_device_properties(self.device).multi_processor_count
            self.triton = self._probe()
        self.backend = "triton-paged" if self.triton else "reference"

    def __call__(self, q, k_pages, v_pages, block_table, used, pages):
        if self.triton:
            return paged_decode(q, k_pages, v_pages, block_table, used, pages, self.scale, sms=self.sms)
        return reference(q, k_pages, v_pages, block_table, used, pages, self.scale)

    def _probe(self):
        """True if paged_decode matches reference (with the heuristic's splits and with one split) on random data:
        three rows of which two share their first two pages, lengths 1, ragged and a full page multiple, and
        stale in-range block-table entries (a kernel that read them would give a wrong answer, not a fault)."""
        try:
            case = probe_case(self.heads, self.kv_heads, self.head_dim, self.page_size, self.dtype, self.device)
            want = reference(*case, self.scale).float()
            err = 0.0
            for splits in (None, 1):
                got = paged_decode(*case, self.scale, splits=splits, sms=self.sms)
                err = max(err, float((got.float() - want).abs().max()))
            torch.cuda.synchronize(self.device)
        except Exception as e:  # a Triton that cannot compile this shape: the reference serves
            self.probe_error = repr(e)
            return False
        self.probe_error = err
        return err < _TOLERANCE[self.dtype]


def probe_case(heads, kv_heads, head_dim, page_size, dtype, device, pages=5, seed=0):
    """(q, k_pages, v_pages, block_table, used, pages): three rows over 2 x pages + 2 physical pages; rows 1 and 2
    share their first two; lengths 1, 2.5 pages, pages x page_size; stale entries point at the last physical page."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    num = 2 * pages + 2
    shape = (num, page_size, kv_heads, head_dim)
    k = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    v = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    q = torch.randn((3, heads, head_dim), generator=gen).to(device=device, dtype=dtype)
    table = torch.full((4, pages), num - 1, dtype=torch.int32)
    table[0, 0] = 3
    table[1, :3] = torch.tensor([0, 1, 2], dtype=torch.int32)
    table[2] = torch.tensor([0, 1] + list(range(4, 4 + pages - 2)), dtype=torch.int32)
    used = torch.tensor([1, 2 * page_size + page_size // 2, pages * page_size], dtype=torch.int32)
    return q, k, v, table.to(device), used.to(device), pages


def shared_prompt_case(batch, heads, kv_heads, head_dim, page_size, dtype, device, prompt=1536, context=2400,
                       spread=256, group=16, seed=0):
    """A rollout-like paged cache (tests and bench/train/paged_decode_speed.py): rows in groups of `group` share
    the full pages of one `prompt`-token prompt; row lengths are uniform in context +- spread (at least prompt + 1);
    physical pages are handed out in a random order; stale block-table entries point at random valid pages.
    Returns (q, k_pages, v_pages, block_table, used, pages)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    lo = max(prompt + 1, context - spread)
    used = torch.randint(lo, max(lo, context + spread) + 1, (batch,), generator=gen, dtype=torch.int32)
    pages = -(-int(used.max()) // page_size)
    shared = prompt // page_size
    own = [-(-int(u) // page_size) - shared for u in used.tolist()]
    groups = -(-batch // group)
    num = groups * shared + sum(own)
    order = torch.randperm(num, generator=gen).to(torch.int32)
    table = torch.randint(0, num, (batch, pages), generator=gen, dtype=torch.int32)
    nxt = groups * shared
    for b in range(batch):
        first = (b // group) * shared
        table[b, :shared] = order[first:first + shared]
        table[b, shared:shared + own[b]] = order[nxt:nxt + own[b]]
        nxt += own[b]
    dev = torch.Generator(device=device).manual_seed(seed)  # the pages are large: drawn where they live
    shape = (num, page_size, kv_heads, head_dim)
    k = torch.randn(shape, generator=dev, device=device).to(dtype)
    v = torch.randn(shape, generator=dev, device=device).to(dtype)
    q = torch.randn((batch, heads, head_dim), generator=dev, device=device).to(dtype)
    return q, k, v, table.to(device), used.to(device), pages
