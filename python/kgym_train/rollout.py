"""The rollout engine: samples continuations from the learner's live weights at the speed of the hardware.

What it does, and how:
  KV cache      static: per layer one key and one value tensor (slots, max_len, Hkv, D) in the model's dtype,
                allocated once. A sequence holds one slot from admission to its end. `slots` follows the memory
                given to it (RolloutEngine.plan); max_len = the longest prompt + response a run allows.
  decode step   one token for every slot of a batch bucket (the slots 0..b-1): embed, per layer project ->
                write k/v at the slot's position -> attention over each slot's own positions only
                (attention.Decode: FlashAttention with per-row key lengths; the masked-SDPA fallback reads the
                first L positions, L the smallest length bucket holding every live sequence) -> output/MLP, then
                fp32 logits and sampling (sampling.py), all tensor code. On CUDA each (b, L, filtered)
                step is captured once as a CUDA graph and replayed; a chunk of `chunk` steps runs with no host
                synchronisation, then the chunk's tokens come back in one copy.
  admission     continuous batching: at every chunk boundary the finished sequences leave their slots and
                waiting ones take them (lowest free slot first). The waiting prompts are prefilled together as
                one packed forward (attention.packed_causal); identical prompts (the n samples of one prompt) are
                prefilled once and their keys/values written into each of their slots, so a group of n costs one
                prompt's prefill.
  sampling      per sequence: temperature (0 = greedy), top_k, top_p, seed (counter-based noise: a sequence's
                tokens depend only on its seed, not on its batch), max_tokens, stop token ids (device side) and
                stop strings (host side, checked on each chunk's decoded tail; the text ends before the stop
                string, the tokens run through the token that completed it); the log-prob of every sampled token
                under the unmodified policy.
  weights       decoder.py views the live modules: the optimizer's in-place updates are what the next step
                serves, and captured graphs stay valid (parameters are never reallocated).

Thread-safety: one thread drives an engine (the learner's generation thread, or the caller of `generate`);
`submit` may be called from any thread. GPU work is the caller's to serialise with the learner's other work
(Learner.lock).
"""
import collections
import math
import threading
import time

import torch

from . import attention, sampling
from .decoder import view_of

BATCH_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512)
LENGTH_QUANTUM = 256  # cache-length buckets are multiples of this (and max_len itself)


def sample_seed(seed, k):
    """The seed of the k-th sequence of a request seeded `seed` (None: unseeded): each sequence samples from its own
    seed, so its tokens depend neither on the batch it runs in nor on the ranks that share the batch."""
    return None if seed is None else int(seed) * 1000003 + k


class Request:
    """One sequence to sample. `prompt` a list of ids; `stop` a list of strings; `seed` any int (None: from the
    engine's counter). Filled in by the engine: tokens, logprobs, finish_reason ("stop" | "length"), text_end (the
    character offset where a stop string began, else None)."""

    def __init__(self, prompt, max_tokens, temperature=1.0, top_p=1.0, top_k=-1, seed=None, stop=None):
        if not prompt:
            raise ValueError("a prompt needs at least one token")
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        self.prompt = list(prompt)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.top_k = int(top_k)
        self.seed = seed
        self.stop = [s for s in (stop or []) if s]
        self.tokens, self.logprobs = [], []
        self.finish_reason = None
        self.text_end = None
        self.done = threading.Event()
        self.error = None
        self.version = None  # the policy version that finished it (the server's)

    @property
    def filtered(self):
        return self.temperature > 0 and (0 < self.top_k or self.top_p < 1.0)


class _State:
    """The device-side state of every slot (vectors of length `slots`), and the chunk's output rows."""

    def __init__(self, slots, chunk, device):
        z = lambda dtype: torch.zeros(slots, dtype=dtype, device=device)  # noqa: E731
        self.tokens, self.pos, self.gen, self.max_new = z(torch.long), z(torch.long), z(torch.long), z(torch.long)
        self.seed, self.top_k = z(torch.long), z(torch.long)
        self.temp, self.top_p = z(torch.float32), torch.ones(slots, dtype=torch.float32, device=device)
        self.done = torch.ones(slots, dtype=torch.bool, device=device)
        self.k = torch.zeros(1, dtype=torch.long, device=device)  # the output row the next step writes
        self.out_tokens = torch.zeros((chunk, slots), dtype=torch.long, device=device)
        self.out_logp = torch.zeros((chunk, slots), dtype=torch.float32, device=device)

    def vectors(self):
        return [self.tokens, self.pos, self.gen, self.max_new, self.seed, self.top_k, self.temp, self.top_p,
                self.done, self.k, self.out_tokens, self.out_logp]


class RolloutEngine:
    def __init__(self, policy, slots, max_len, stop_ids, decode=None, chunk=16, prefill_tokens=16384,
                 cuda_graphs=None, vocab_limit=None):
        """`vocab_limit`: ids at or past it are never sampled (the tokenizer's size, where the model's vocabulary
        is padded past it)."""
        self.policy = policy
        self.view = view_of(policy)
        self.device = policy.device
        self.slots = int(slots)
        self.max_len = int(max_len)
        self.chunk = int(chunk)
        self.prefill_tokens = int(prefill_tokens)
        self.decode_text = decode
        self.graphs_on = self.device.type == "cuda" and (cuda_graphs is None or bool(cuda_graphs))
        v = self.view
        shape = (self.slots, self.max_len, v.kv_heads, v.head_dim)
        self.k_cache = [torch.zeros(shape, dtype=v.dtype, device=self.device) for _ in range(v.layers)]
        self.v_cache = [torch.zeros(shape, dtype=v.dtype, device=self.device) for _ in range(v.layers)]
        self.state = _State(self.slots, self.chunk, self.device)
        self.attend = attention.Decode(self.k_cache[0], v.heads, 1.0 / math.sqrt(v.head_dim))
        self.stop_tensor = torch.tensor(sorted(set(int(s) for s in stop_ids)) or [-1], device=self.device)
        self.stop_set = set(int(s) for s in stop_ids)
        self.vkeys = sampling.vocab_keys(min(policy.vocab_size(), vocab_limit or policy.vocab_size()), self.device)
        self.arange_slots = torch.arange(self.slots, device=self.device)
        self.graphs = {}
        self.pool = None
        self.live = {}  # slot -> Request
        self.waiting = collections.deque()
        self.lock = threading.Lock()  # guards `waiting`
        self.seed_counter = 0
        self.finished = []
        self.stats = collections.Counter()

    @staticmethod
    def plan(view, max_len, budget_bytes, most):
        """Slots that fit `budget_bytes` of KV cache for sequences of up to max_len tokens (at most `most`)."""
        per_slot = kv_bytes_per_token(view) * max_len
        return max(1, min(int(most), int(budget_bytes // per_slot)))

    def cache_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.k_cache + self.v_cache)

    # ---- the public surface -----------------------------------------------------------------------------------
    def submit(self, requests):
        for r in requests:
            if len(r.prompt) >= self.max_len:
                raise ValueError(f"a prompt of {len(r.prompt)} tokens does not fit the engine's {self.max_len}-token "
                                 "sequences")
        with self.lock:
            self.waiting.extend(requests)

    def busy(self):
        with self.lock:
            return bool(self.live) or bool(self.waiting)

    @torch.no_grad()
    def generate(self, requests):
        """Samples every request to its end (batch use); returns them."""
        self.submit(requests)
        while self.busy():
            for r in self.step():
                r.done.set()
        return requests

    @torch.no_grad()
    def step(self):
        """One chunk: admit waiting requests into free slots, run up to `chunk` decode steps; returns the requests
        that ended (the caller sets their `done`)."""
        self.finished = []
        self._admit()
        if not self.live:
            self._retire()
            return self.finished
        hi = max(self.live) + 1
        b = next(x for x in BATCH_BUCKETS + (self.slots,) if x >= hi)
        b = min(b, self.slots)
        longest = max(len(r.prompt) + len(r.tokens) for r in self.live.values())
        steps = self.chunk
        length = min(self.max_len, _round_up(longest + steps, LENGTH_QUANTUM))
        filtered = any(r.filtered for r in self.live.values())
        t0 = time.perf_counter()
        self.state.k.zero_()
        run = self._step_fn(b, length, filtered)
        for _ in range(steps):
            run()
        toks = self.state.out_tokens[:steps, :b].cpu()
        lps = self.state.out_logp[:steps, :b].cpu()
        self.stats["decode_s"] += time.perf_counter() - t0
        self.stats["decode_steps"] += steps
        self.stats["slot_steps"] += steps * len(self.live)
        self._harvest(toks, lps)
        return self.finished

    def fail_all(self, error):
        """After a failed step: every live and waiting request ends with `error` (its `done` set); slots freed."""
        with self.lock:
            doomed = list(self.live.values()) + list(self.waiting)
            self.waiting.clear()
        self.live.clear()
        self.state.done.fill_(True)
        for r in doomed:
            r.error = error
            r.done.set()

    # ---- admission ----------------------------------------------------------------------------------------------
    def _admit(self):
        free = [s for s in range(self.slots) if s not in self.live]
        with self.lock:
            take = []
            while self.waiting and len(take) < len(free):
                take.append(self.waiting.popleft())
        if not take:
            return
        t0 = time.perf_counter()
        placed = list(zip(free, take))
        for s, r in placed:
            if r.seed is None:
                self.seed_counter += 1
                r.seed = self.seed_counter
            self.live[s] = r
        groups = collections.OrderedDict()
        for s, r in placed:
            groups.setdefault(tuple(r.prompt), []).append(s)
        prompts = list(groups)
        start = 0
        while start < len(prompts):  # packed prefills of at most prefill_tokens tokens (at least one prompt)
            end, used = start, 0
            while end < len(prompts) and (end == start or used + len(prompts[end]) <= self.prefill_tokens):
                used += len(prompts[end])
                end += 1
            self._prefill([(list(p), groups[p]) for p in prompts[start:end]])
            start = end
        self.stats["prefill_s"] += time.perf_counter() - t0
        self.stats["prefill_tokens"] += sum(len(p) for p in prompts)
        self.stats["admitted"] += len(placed)

    def _prefill(self, groups):
        """groups: [(prompt ids, [slots])]. Writes the prompts' keys/values into their slots and samples each
        slot's first token."""
        v = self.view
        seqs = [p for p, _ in groups]
        ids = torch.tensor([t for p in seqs for t in p], dtype=torch.long, device=self.device)
        pos = torch.cat([torch.arange(len(p), dtype=torch.long) for p in seqs]).to(self.device)
        offsets = [0]
        for p in seqs:
            offsets.append(offsets[-1] + len(p))
        cu = torch.tensor(offsets, dtype=torch.int32, device=self.device)
        dst_slot, dst_pos, src = [], [], []
        for (p, slots), off in zip(groups, offsets):
            for s in slots:
                dst_slot += [s] * len(p)
                dst_pos += list(range(len(p)))
                src += list(range(off, off + len(p)))
        dst_slot = torch.tensor(dst_slot, dtype=torch.long, device=self.device)
        dst_pos = torch.tensor(dst_pos, dtype=torch.long, device=self.device)
        src = torch.tensor(src, dtype=torch.long, device=self.device)
        x = v.embed(ids[None], pos[None])
        r = v.rope(x, pos[None])
        for i in range(v.layers):
            q, k, val = v.project(i, x, r)  # (1, H, N, D), (1, Hkv, N, D)
            k, val = k[0].transpose(0, 1), val[0].transpose(0, 1)  # (N, Hkv, D)
            self.k_cache[i][dst_slot, dst_pos] = k[src]
            self.v_cache[i][dst_slot, dst_pos] = val[src]
            a = attention.packed_causal(q[0].transpose(0, 1), k, val, cu, max(len(p) for p in seqs))
            x = v.finish(i, x, a.reshape(1, a.shape[0], -1))
        last = torch.tensor([o - 1 for o in offsets[1:]], dtype=torch.long, device=self.device)
        logits = v.logits(x[0, last])  # (groups, V) float32
        slots, rows = [], []
        for g, (_, ss) in enumerate(groups):
            slots += ss
            rows += [g] * len(ss)
        reqs = [self.live[s] for s in slots]
        st = self.state
        idx = torch.tensor(slots, dtype=torch.long, device=self.device)
        dev = lambda vals, dtype: torch.tensor(vals, dtype=dtype, device=self.device)  # noqa: E731
        seed = dev([int(q.seed) & 0x7FFFFFFFFFFFFFFF for q in reqs], torch.long)
        temp = dev([q.temperature for q in reqs], torch.float32)
        top_k = dev([q.top_k for q in reqs], torch.long)
        top_p = dev([q.top_p for q in reqs], torch.float32)
        zero = torch.zeros(len(reqs), dtype=torch.long, device=self.device)
        tok, lp = sampling.sample(logits[dev(rows, torch.long)], temp, top_k, top_p, seed, zero, self.vkeys,
                                  any(q.filtered for q in reqs))
        plen = dev([len(q.prompt) for q in reqs], torch.long)
        max_new = dev([min(q.max_tokens, self.max_len - len(q.prompt)) for q in reqs], torch.long)
        st.tokens[idx], st.pos[idx], st.gen[idx], st.max_new[idx] = tok, plen, torch.ones_like(zero), max_new
        st.seed[idx], st.temp[idx], st.top_k[idx], st.top_p[idx] = seed, temp, top_k, top_p
        st.done[idx] = self._is_stop(tok) | (max_new <= 1)
        for q, t, l in zip(reqs, tok.tolist(), lp.tolist()):
            q.tokens.append(t)
            q.logprobs.append(l)
        for s, q in zip(slots, reqs):
            self._check_end(s, q, 1)

    # ---- the decode step ----------------------------------------------------------------------------------------
    def _decode(self, b, length, filtered):
        """One token for slots 0..b-1 against the first `length` cache positions; all tensor code."""
        v, st = self.view, self.state
        active = ~st.done[:b]
        pos = st.pos[:b].clamp(max=self.max_len - 1)
        x = v.embed(st.tokens[:b, None], pos[:, None])
        r = v.rope(x, pos[:, None])
        rows = self.arange_slots[:b]
        used = (pos + 1).to(torch.int32)
        for i in range(v.layers):
            q, k, val = v.project(i, x, r)
            self.k_cache[i][rows, pos] = k[:, :, 0]
            self.v_cache[i][rows, pos] = val[:, :, 0]
            a = self.attend(q[:, :, 0], self.k_cache[i], self.v_cache[i], used, length)
            x = v.finish(i, x, a.reshape(b, 1, -1))
        logits = v.logits(x[:, 0])
        tok, lp = sampling.sample(logits, st.temp[:b], st.top_k[:b], st.top_p[:b], st.seed[:b], st.gen[:b],
                                  self.vkeys, filtered)
        st.out_tokens[:, :b].index_copy_(0, st.k, torch.where(active, tok, torch.full_like(tok, -1))[None])
        st.out_logp[:, :b].index_copy_(0, st.k, lp[None])
        st.k += 1
        ended = self._is_stop(tok) | (st.gen[:b] + 1 >= st.max_new[:b])
        st.tokens[:b] = torch.where(active, tok, st.tokens[:b])
        st.pos[:b] += active.long()
        st.gen[:b] += active.long()
        st.done[:b] |= active & ended

    def _is_stop(self, tok):
        return (tok[:, None] == self.stop_tensor[None, :]).any(-1)

    def _step_fn(self, b, length, filtered):
        if not self.graphs_on:
            return lambda: self._decode(b, length, filtered)
        key = (b, length, filtered)
        g = self.graphs.get(key)
        if g is None:
            g = self._capture(b, length, filtered)
            self.graphs[key] = g
        return g.replay

    def _capture(self, b, length, filtered):
        """A CUDA graph of one decode step. Warm-up runs happen on a side stream; they write the cache only at the
        positions the next real step overwrites, and the slot vectors are restored afterwards."""
        t0 = time.perf_counter()
        saved = [t.clone() for t in self.state.vectors()]
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                self._restore(saved)
                self._decode(b, length, filtered)
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._restore(saved)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool):
            self._decode(b, length, filtered)
        self._restore(saved)
        self.stats["graphs"] += 1
        self.stats["capture_s"] += time.perf_counter() - t0
        return g

    def _restore(self, saved):
        for t, s in zip(self.state.vectors(), saved):
            t.copy_(s)

    # ---- the host side of a chunk -------------------------------------------------------------------------------
    def _harvest(self, toks, lps):
        """Appends a chunk's tokens to their requests and retires the finished ones."""
        tl, ll = toks.t().tolist(), lps.t().tolist()
        for s in sorted(self.live):
            r = self.live[s]
            added = 0
            for t, lp in zip(tl[s], ll[s]):
                if t < 0 or r.finish_reason is not None:
                    break
                r.tokens.append(t)
                r.logprobs.append(lp)
                added += 1
                if t in self.stop_set or len(r.tokens) >= r.max_tokens:
                    break
            self._check_end(s, r, added)
        self._retire()

    def _check_end(self, slot, r, added):
        if r.finish_reason is not None:
            return
        if r.tokens and r.tokens[-1] in self.stop_set:
            r.finish_reason = "stop"
        elif r.stop and self.decode_text is not None and self._hit_stop_string(r, added):
            r.finish_reason = "stop"
        elif len(r.tokens) >= r.max_tokens or len(r.prompt) + len(r.tokens) >= self.max_len:
            r.finish_reason = "length"

    def _hit_stop_string(self, r, added):
        """Looks for a stop string in the text of the tokens a chunk added (and enough before them to span one);
        on a hit, cuts the tokens after the one that completes it and records where the text ends."""
        longest = max(len(s) for s in r.stop)
        first = max(0, len(r.tokens) - added - longest)
        for end in range(len(r.tokens) - added + 1, len(r.tokens) + 1):
            tail = self.decode_text(r.tokens[first:end])
            for s in r.stop:
                at = tail.find(s)
                if at >= 0:
                    head = self.decode_text(r.tokens[:first])
                    r.text_end = len(head) + at
                    del r.tokens[end:], r.logprobs[end:]
                    return True
        return False

    def _retire(self):
        ended = [s for s, r in self.live.items() if r.finish_reason is not None]
        if not ended:
            return
        self.state.done[torch.tensor(ended, dtype=torch.long, device=self.device)] = True
        for s in ended:
            r = self.live.pop(s)
            self.stats["finished"] += 1
            self.stats["tokens"] += len(r.tokens)
            self.finished.append(r)


def kv_bytes_per_token(view):
    return 2 * view.layers * view.kv_heads * view.head_dim * torch.tensor([], dtype=view.dtype).element_size()


def _round_up(n, q):
    return int(math.ceil(n / q) * q)
