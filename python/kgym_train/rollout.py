"""The rollout engine: samples continuations from the learner's live weights at the speed of the hardware.

What it does, and how:
  KV cache      paged (kv_pages.py): fixed-size pages of `page_size` tokens from one pool per layer, a block table
                per slot, so a sequence holds memory for the tokens it has, not for the longest it could have. The
                pool holds `kv_tokens` tokens (RolloutEngine.plan: the memory given to it); `slots` bounds how many
                sequences decode at once; max_len = the longest prompt + response a run allows.
  decode step   one token for every slot of a batch bucket (the slots 0..b-1): embed, per layer project ->
                write k/v at the slot's position (its page, or the trash page for rows not live) -> attention over
                each slot's own used positions only (paged_attention.PagedDecode: the block table read by the
                kernel, no position past a row's length read) -> output/MLP, then fp32 logits and sampling
                (sampling.py; on CUDA one fused kernel, sample_kernel.py), all tensor code. On CUDA each (b, pages,
                filtered) step is captured once as a CUDA graph and replayed; a chunk of `chunk` steps runs with no
                host synchronisation, then the chunk's tokens come back in one copy.
  admission     continuous batching: at every chunk boundary the finished sequences leave their slots and give back
                their pages, and waiting ones take free slots (lowest first) while the free pages cover their
                needs and a chunk's growth of everyone live. A prompt is prefilled once, whenever its samples
                enter: its pages and its last position's logits stay (a kv_pages.Prefix) until the last request
                with that prompt is admitted; each sample shares the prompt's full pages, copies its partial last
                page and samples its first token from the kept logits. The new prompts of one admission are
                prefilled together as one packed forward (attention.packed_causal).
  growth        before a chunk every live sequence gets the pages its next `chunk` tokens need; when the pool runs
                dry the most recently admitted sequences are evicted (their pages freed) and wait at the front of the
                queue; re-admitted, one recomputes its prompt and tokens so far in a private prefill and goes on
                where it stopped (its samples depend only on its seed and position, so its tokens are the same).
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

from . import attention
from .decoder import view_of
from .fused_project import FusedProject
from .kv_pages import PagedKV, Prefix
from .paged_attention import PagedDecode
from .rollout_state import Request, _State, sample_seed  # noqa: F401  (Request, sample_seed: the engine's surface)
from .sample_kernel import Sampler

BATCH_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512)
LENGTH_QUANTUM = 256  # cache-length buckets are multiples of this (and max_len itself)
PAGE_SIZE = 64  # tokens per KV page (divides LENGTH_QUANTUM)


class RolloutEngine:
    def __init__(self, policy, slots, max_len, stop_ids, decode=None, chunk=16, prefill_tokens=16384,
                 cuda_graphs=None, vocab_limit=None, kv_tokens=None, page_size=PAGE_SIZE):
        """`kv_tokens`: the KV pool's size in tokens (default: every slot can hold a whole sequence, as a static
        cache would); at least one sequence and its prompt's pages. `vocab_limit`: ids at or past it are never
        sampled (the tokenizer's size, where the model's vocabulary is padded past it)."""
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
        seq_pages = -(-self.max_len // int(page_size)) + 1  # a whole sequence, and the copy of its prompt's last page
        pages = max(-(-int(kv_tokens) // int(page_size)), seq_pages + 1) if kv_tokens else self.slots * seq_pages
        self.kv = PagedKV(v, 1 + pages, page_size, self.slots, self.max_len, self.device)
        self.page_size = self.kv.page_size
        self.state = _State(self.slots, self.chunk, self.device)
        self.attend = PagedDecode(v.heads, v.kv_heads, v.head_dim, self.page_size, v.dtype, self.device,
                                  1.0 / math.sqrt(v.head_dim))
        self.stop_tensor = torch.tensor(sorted(set(int(s) for s in stop_ids)) or [-1], device=self.device)
        self.stop_set = set(int(s) for s in stop_ids)
        self.project = FusedProject(v, self.device)
        self.sampler = Sampler(min(policy.vocab_size(), vocab_limit or policy.vocab_size()), self.device)
        self.arange_slots = torch.arange(self.slots, device=self.device)
        self.graphs = {}
        self.pool = None
        self.live = {}  # slot -> Request
        self.waiting = collections.deque()
        self.pending = collections.Counter()  # prompt -> requests submitted and not yet admitted (resumes aside)
        self.prefixes = {}  # prompt -> Prefix, while pending
        self.prefix_count = 0  # prefixes made (each one's serial)
        self.lock = threading.Lock()  # guards `waiting` and `pending`
        self.seed_counter = 0
        self.order = 0
        self.finished = []
        self.stats = collections.Counter()
        self.trace = None  # a list to have each chunk's (live sequences, steps that made a token) appended

    @staticmethod
    def plan(view, budget_bytes):
        """Tokens of KV cache that fit `budget_bytes` (the constructor raises it to one whole sequence at least)."""
        return int(budget_bytes // kv_bytes_per_token(view))

    def cache_bytes(self):
        return self.kv.bytes()

    # ---- the public surface -----------------------------------------------------------------------------------
    def submit(self, requests):
        for r in requests:
            if len(r.prompt) >= self.max_len:
                raise ValueError(f"a prompt of {len(r.prompt)} tokens does not fit the engine's {self.max_len}-token "
                                 "sequences")
        with self.lock:
            self.waiting.extend(requests)
            for r in requests:
                self.pending[tuple(r.prompt)] += 1

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
        """One chunk: admit waiting requests into free slots, give every live sequence the pages of the chunk's
        tokens, run up to `chunk` decode steps; returns the requests that ended (the caller sets their `done`)."""
        self.finished = []
        self._admit()
        steps = self.chunk
        self._grow(steps)
        if not self.live:
            self._retire()
            return self.finished
        self.kv.upload()
        hi = max(self.live) + 1
        b = next(x for x in BATCH_BUCKETS + (self.slots,) if x >= hi)
        b = min(b, self.slots)
        longest = max(len(r.prompt) + len(r.tokens) for r in self.live.values())
        length = min(self.max_len, _round_up(longest + steps, LENGTH_QUANTUM))
        pages = self.kv.pages_for(length)
        filtered = any(r.filtered for r in self.live.values())
        t0 = time.perf_counter()
        self.state.k.zero_()
        run = self._step_fn(b, pages, filtered)
        for _ in range(steps):
            run()
        toks = self.state.out_tokens[:steps, :b].cpu()
        lps = self.state.out_logp[:steps, :b].cpu()
        self.stats["decode_s"] += time.perf_counter() - t0
        self.stats["decode_steps"] += steps
        self.stats["slot_steps"] += steps * len(self.live)
        self.stats["live_peak"] = max(self.stats["live_peak"], len(self.live))
        self._harvest(toks, lps)
        return self.finished

    def fail_all(self, error):
        """After a failed step: every live and waiting request ends with `error` (its `done` set); slots and pages
        freed."""
        with self.lock:
            doomed = list(self.live.values()) + list(self.waiting)
            self.waiting.clear()
            self.pending.clear()
        for s in list(self.live):
            self.kv.release(s)
        self.live.clear()
        for p in self.prefixes.values():
            self.kv.drop(p.pages)
        self.prefixes.clear()
        self.state.done.fill_(True)
        for r in doomed:
            r.error = error
            r.done.set()

    # ---- admission ----------------------------------------------------------------------------------------------
    def _admit(self):
        take = self._take_waiting()
        if not take:
            if not self.live and self.waiting:
                raise RuntimeError(f"the KV cache ({self.kv.num_pages - 1} pages of {self.page_size} tokens) cannot "
                                   "hold the next waiting sequence")
            return
        t0 = time.perf_counter()
        free = [s for s in range(self.slots) if s not in self.live]
        placed = list(zip(free, take))
        for s, r in placed:
            if r.seed is None:
                self.seed_counter += 1
                r.seed = self.seed_counter
            self.order += 1
            r.order = self.order
            self.live[s] = r
        self._prefill_prompts([r for _, r in placed if not r.resume])
        self._start_samples([(s, r) for s, r in placed if not r.resume])
        self._resume([(s, r) for s, r in placed if r.resume])
        self.stats["prefill_s"] += time.perf_counter() - t0
        self.stats["admitted"] += len(placed)

    def _take_waiting(self):
        """Waiting requests for the free slots, in order, while the free pages cover each one's own pages plus a
        chunk's growth of every sequence that would be live (the first one whenever it fits at all)."""
        free_slots = self.slots - len(self.live)
        budget = self.kv.free_pages()
        new_prompts = set()
        take = []
        with self.lock:
            while self.waiting and len(take) < free_slots:
                r = self.waiting[0]
                need = self._pages_to_start(r, new_prompts)
                live = len(self.live) + len(take) + 1
                reserve = -(-live * self.chunk // self.page_size) + 1
                if need + reserve > budget and (self.live or take or need > budget):
                    break
                budget -= need
                if not r.resume:
                    new_prompts.add(tuple(r.prompt))
                    self.pending[tuple(r.prompt)] -= 1
                take.append(self.waiting.popleft())
        return take

    def _pages_to_start(self, r, new_prompts):
        if r.resume:
            return self.kv.pages_for(len(r.prompt) + len(r.tokens) - 1 + self.chunk)
        key = tuple(r.prompt)
        copy = 1 if len(r.prompt) % self.page_size else 0
        if key in self.prefixes or key in new_prompts:
            return copy
        return self.kv.pages_for(len(r.prompt)) + copy

    def _prefill_prompts(self, reqs):
        """Prefills, in packed forwards of at most prefill_tokens tokens, the prompts among `reqs` that have no
        Prefix yet, and keeps each one's pages and last logits."""
        todo = []
        for r in reqs:
            key = tuple(r.prompt)
            if key not in self.prefixes and key not in todo:
                todo.append(key)
        start = 0
        while start < len(todo):
            end, used = start, 0
            while end < len(todo) and (end == start or used + len(todo[end]) <= self.prefill_tokens):
                used += len(todo[end])
                end += 1
            seqs = [list(p) for p in todo[start:end]]
            pages = [self.kv.take(self.kv.pages_for(len(p))) for p in seqs]
            if any(p is None for p in pages):
                raise RuntimeError("the KV cache ran out of pages during admission")
            logits = self.view.logits(self._prefill(seqs, pages))
            for g, p in enumerate(seqs):
                self.prefix_count += 1
                self.prefixes[tuple(p)] = Prefix(len(p), pages[g], logits[g], self.prefix_count)
            self.stats["prefill_tokens"] += used
            self.stats["prefills"] += len(seqs)
            start = end

    def _prefill(self, seqs, pages):
        """One packed causal forward of `seqs` (lists of ids), writing sequence i's keys/values into pages[i];
        returns the hidden state of each sequence's last position (len(seqs), hidden)."""
        v, kv = self.view, self.kv
        ids = torch.tensor([t for p in seqs for t in p], dtype=torch.long, device=self.device)
        pos = torch.cat([torch.arange(len(p), dtype=torch.long) for p in seqs]).to(self.device)
        offsets = [0]
        for p in seqs:
            offsets.append(offsets[-1] + len(p))
        cu = torch.tensor(offsets, dtype=torch.int32, device=self.device)
        rows = [i for p, pg in zip(seqs, pages) for i in kv.flat_index(pg, range(len(p)))]
        rows = torch.tensor(rows, dtype=torch.long, device=self.device)
        x = v.embed(ids[None], pos[None])
        r = v.rope(x, pos[None])
        for i in range(v.layers):
            q, k, val = v.project(i, x, r)  # (1, H, N, D), (1, Hkv, N, D)
            k, val = k[0].transpose(0, 1), val[0].transpose(0, 1)  # (N, Hkv, D)
            kv.write(i, rows, k, val)
            a = attention.packed_causal(q[0].transpose(0, 1), k, val, cu, max(len(p) for p in seqs))
            x = v.finish(i, x, a.reshape(1, a.shape[0], -1))
        last = torch.tensor([o - 1 for o in offsets[1:]], dtype=torch.long, device=self.device)
        return x[0, last]

    def _start_samples(self, placed):
        """Each (slot, request) of a prompt with a Prefix: shares its pages, samples its first token from its
        logits; a Prefix no request waits for any more is let go."""
        if not placed:
            return
        logits = []
        for s, r in placed:
            pre = self.prefixes[tuple(r.prompt)]
            if not self.kv.attach_prefix(s, pre):
                raise RuntimeError("the KV cache ran out of pages during admission")
            r.shared = pre.length // self.page_size * self.page_size
            r.group = pre.serial
            logits.append(pre.logits)
        with self.lock:
            for key in {tuple(r.prompt) for _, r in placed}:
                if self.pending[key] <= 0:
                    del self.pending[key]
                    self.kv.drop(self.prefixes.pop(key).pages)
        slots = [s for s, _ in placed]
        reqs = [r for _, r in placed]
        st = self.state
        idx = self._place(slots, reqs)
        first = torch.zeros(len(reqs), dtype=torch.long, device=self.device)
        tok, lp = self.sampler(torch.stack(logits), st.temp[idx], st.top_k[idx], st.top_p[idx], st.seed[idx], first,
                               any(q.filtered for q in reqs))
        st.tokens[idx], st.gen[idx] = tok, torch.ones_like(first)
        st.pos[idx] = torch.tensor([len(q.prompt) for q in reqs], dtype=torch.long, device=self.device)
        st.done[idx] = self._is_stop(tok) | (st.max_new[idx] <= 1)
        for q, t, l in zip(reqs, tok.tolist(), lp.tolist()):
            q.tokens.append(t)
            q.logprobs.append(l)
        for s, q in zip(slots, reqs):
            self._check_end(s, q, 1)

    def _resume(self, placed):
        """Evicted sequences back in slots: their prompt and tokens but the last recomputed into fresh pages, the
        last token their next input, their sampling state as they left it."""
        if not placed:
            return
        seqs = [r.prompt + r.tokens[:-1] for _, r in placed]
        pages = [self.kv.take(self.kv.pages_for(len(p))) for p in seqs]
        if any(p is None for p in pages):
            raise RuntimeError("the KV cache ran out of pages during admission")
        for (s, _), pg in zip(placed, pages):
            self.kv.attach(s, pg)
        self._prefill(seqs, pages)
        st = self.state
        reqs = [r for _, r in placed]
        idx = self._place([s for s, _ in placed], reqs)
        dev = lambda vals: torch.tensor(vals, dtype=torch.long, device=self.device)  # noqa: E731
        st.tokens[idx] = dev([r.tokens[-1] for r in reqs])
        st.pos[idx] = dev([len(p) for p in seqs])
        st.gen[idx] = dev([len(r.tokens) for r in reqs])
        st.done[idx] = False
        for r in reqs:
            r.resume, r.shared, r.group = False, 0, None
        self.stats["recompute_tokens"] += sum(len(p) for p in seqs)

    def _place(self, slots, reqs):
        """Writes each request's sampling parameters (seed, temperature, top-k, top-p, its token budget) into its
        slot's vectors; returns the slots as an index tensor."""
        st = self.state
        dev = lambda vals, dtype: torch.tensor(vals, dtype=dtype, device=self.device)  # noqa: E731
        idx = dev(slots, torch.long)
        st.seed[idx] = dev([int(r.seed) & 0x7FFFFFFFFFFFFFFF for r in reqs], torch.long)
        st.temp[idx] = dev([r.temperature for r in reqs], torch.float32)
        st.top_k[idx] = dev([r.top_k for r in reqs], torch.long)
        st.top_p[idx] = dev([r.top_p for r in reqs], torch.float32)
        st.max_new[idx] = dev([min(r.max_tokens, self.max_len - len(r.prompt)) for r in reqs], torch.long)
        return idx

    # ---- growth and eviction ------------------------------------------------------------------------------------
    def _grow(self, steps):
        """Pages for the next `steps` tokens of every live sequence, oldest first; the youngest are evicted while
        the pool cannot cover them."""
        for s in sorted(self.live, key=lambda s: self.live[s].order):
            if s not in self.live:
                continue
            r = self.live[s]
            need = min(self.max_len, len(r.prompt) + len(r.tokens) - 1 + steps)
            while not self.kv.grow(s, need):
                young = max(self.live, key=lambda x: self.live[x].order)
                self._evict(young)
                if young == s:
                    break

    def _evict(self, slot):
        r = self.live.pop(slot)
        self.kv.release(slot)
        self.state.done[slot] = True
        r.resume = True
        with self.lock:
            self.waiting.appendleft(r)
        self.stats["evicted"] += 1

    # ---- the decode step ----------------------------------------------------------------------------------------
    def _decode(self, b, pages, filtered):
        """One token for slots 0..b-1 against the first `pages` block-table columns; all tensor code. A row not
        live writes into the trash page and attends to one key."""
        v, st, kv = self.view, self.state, self.kv
        active = ~st.done[:b]
        pos = st.pos[:b].clamp(max=self.max_len - 1)
        x = v.embed(st.tokens[:b, None], pos[:, None])
        r = v.rope(x, pos[:, None])
        rows = self.arange_slots[:b]
        p = self.page_size
        dest = kv.table[rows, pos // p].long() * p + pos % p
        dest = torch.where(active, dest, pos % p)  # page 0, the trash page
        used = torch.where(active, pos + 1, torch.ones_like(pos)).to(torch.int32)
        for i in range(v.layers):
            q = self._project(i, x, r, dest)
            a = self.attend(q, kv.k[i], kv.v[i], kv.table, used, pages)
            x = v.finish(i, x, a.reshape(b, 1, -1))
        logits = v.logits(x[:, 0])
        tok, lp = self.sampler(logits, st.temp[:b], st.top_k[:b], st.top_p[:b], st.seed[:b], st.gen[:b], filtered)
        st.out_tokens[:, :b].index_copy_(0, st.k, torch.where(active, tok, torch.full_like(tok, -1))[None])
        st.out_logp[:, :b].index_copy_(0, st.k, lp[None])
        st.k += 1
        ended = self._is_stop(tok) | (st.gen[:b] + 1 >= st.max_new[:b])
        st.tokens[:b] = torch.where(active, tok, st.tokens[:b])
        st.pos[:b] += active.long()
        st.gen[:b] += active.long()
        st.done[:b] |= active & ended

    def _project(self, i, x, r, dest):
        """Layer i's query (B, H, D) for one token per row, its key/value written at `dest` (flat page rows)."""
        v, kv = self.view, self.kv
        if self.project.fused:
            q, k, val, qw, kw, eps = v.project_parts(i, x)
            cos, sin = r
            return self.project(q, k, val, qw, kw, eps, cos.reshape(q.shape[0], -1), sin.reshape(q.shape[0], -1),
                                *kv.flat(i), dest)
        q, k, val = v.project(i, x, r)
        kv.write(i, dest, k[:, :, 0], val[:, :, 0])
        return q[:, :, 0]

    def _is_stop(self, tok):
        return (tok[:, None] == self.stop_tensor[None, :]).any(-1)

    def _step_fn(self, b, pages, filtered):
        if not self.graphs_on:
            return lambda: self._decode(b, pages, filtered)
        key = (b, pages, filtered)
        g = self.graphs.get(key)
        if g is None:
            g = self._capture(b, pages, filtered)
            self.graphs[key] = g
        return g.replay

    def _capture(self, b, pages, filtered):
        """A CUDA graph of one decode step. Warm-up runs happen on a side stream; they write the cache only at the
        positions the next real step overwrites, and the slot vectors are restored afterwards."""
        t0 = time.perf_counter()
        saved = [t.clone() for t in self.state.vectors()]
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                self._restore(saved)
                self._decode(b, pages, filtered)
        torch.cuda.current_stream(self.device).wait_stream(side)
        self._restore(saved)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool):
            self._decode(b, pages, filtered)
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
        made = []  # (request, keys its first step in the chunk read, tokens added)
        for s in sorted(self.live):
            r = self.live[s]
            context = len(r.prompt) + len(r.tokens)
            added = 0
            for t, lp in zip(tl[s], ll[s]):
                if t < 0 or r.finish_reason is not None:
                    break
                r.tokens.append(t)
                r.logprobs.append(lp)
                added += 1
                if t in self.stop_set or len(r.tokens) >= r.max_tokens:
                    break
            made.append((r, context, added))
            self._check_end(s, r, added)
        self._count_reads(made)
        self._retire()

    def _count_reads(self, made):
        """What the chunk read, for the bound a bench sets against it: steps that made a token (each reads every
        weight), the keys/values each token attended to counted per row (kv_token_reads), and counted with a
        prompt's shared pages once per step whatever the samples reading them (kv_token_reads_distinct)."""
        longest = max((a for _, _, a in made), default=0)
        groups = {}
        for r, context, added in made:
            span = added * context + added * (added - 1) // 2
            self.stats["kv_token_reads"] += span
            self.stats["kv_token_reads_distinct"] += span - added * r.shared
            groups[r.group] = max(groups.get(r.group, (0, 0)), (r.shared, added))
        self.stats["kv_token_reads_distinct"] += sum(shared * added for shared, added in groups.values())
        self.stats["working_steps"] += longest
        if self.trace is not None:
            self.trace.append((len(made), longest))

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
            self.kv.release(s)
            self.stats["finished"] += 1
            self.stats["tokens"] += len(r.tokens)
            self.finished.append(r)


def kv_bytes_per_token(view):
    return 2 * view.layers * view.kv_heads * view.head_dim * torch.tensor([], dtype=view.dtype).element_size()


def _round_up(n, q):
    return int(math.ceil(n / q) * q)
