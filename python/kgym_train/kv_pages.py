"""The rollout engine's KV cache, held by used length: fixed-size pages, a block table per slot, and the prompts'
pages shared by every sample of the prompt.

  pages         per layer one key and one value tensor (num_pages, P, Hkv, D). Page 0 is the trash page: rows that
                are not live in a decode step write their key/value there, and every unused block-table entry points
                there, so no step ever writes into a page it does not own.
  block table   (slots, cols) int32 on the device, cols = ceil(max_len / P); its host copy is the truth and is
                uploaded before a step when it changed. Slot s's position t is page table[s, t // P], offset t % P.
  references    a page is free when no slot and no prefix holds it. The full pages of a prompt are held by its
                Prefix and by every slot sampling from it; the prompt's last, partial page is the Prefix's own and
                each slot gets a copy of it (its first generated tokens land there).
  Prefix        one per distinct prompt while some request with that prompt has not been admitted yet: its pages
                and the float32 logits of its last position, so a sample admitted later samples its first token
                without any prefill (a prompt's KV is computed once, however its samples enter).

Thread-safety: one thread (the engine's) uses it.
"""
import math

import torch


class Prefix:
    def __init__(self, length, pages, logits, serial):
        self.serial = serial  # the engine's count of prefixes made: tells the groups of one prompt's samples apart
        self.length = length
        self.pages = pages  # physical pages holding positions 0..length-1 (the last one partial unless length % P == 0)
        self.logits = logits  # (V,) float32: the distribution of the first generated token


class PagedKV:
    TRASH = 0

    def __init__(self, view, num_pages, page_size, slots, max_len, device):
        if num_pages < 2:
            raise ValueError("a paged KV cache needs at least one page besides the trash page")
        self.page_size = int(page_size)
        self.num_pages = int(num_pages)
        self.cols = int(math.ceil(max_len / self.page_size))
        self.device = device
        shape = (self.num_pages, self.page_size, view.kv_heads, view.head_dim)
        self.k = [torch.zeros(shape, dtype=view.dtype, device=device) for _ in range(view.layers)]
        self.v = [torch.zeros(shape, dtype=view.dtype, device=device) for _ in range(view.layers)]
        self.table = torch.zeros((slots, self.cols), dtype=torch.int32, device=device)
        self.host = torch.zeros((slots, self.cols), dtype=torch.int32)
        self.owned = [[] for _ in range(slots)]  # slot -> its pages, in position order
        self.refs = [0] * self.num_pages
        self.free = list(range(self.num_pages - 1, 0, -1))  # a stack; page 0 (trash) is never handed out
        self.dirty = False

    # ---- pages ----------------------------------------------------------------------------------------------------
    def pages_for(self, tokens):
        return int(math.ceil(tokens / self.page_size))

    def free_pages(self):
        return len(self.free)

    def take(self, n):
        """n fresh pages, each held once; None if fewer are free."""
        if n > len(self.free):
            return None
        got = [self.free.pop() for _ in range(n)]
        for p in got:
            self.refs[p] = 1
        return got

    def hold(self, pages):
        for p in pages:
            self.refs[p] += 1

    def drop(self, pages):
        for p in pages:
            self.refs[p] -= 1
            if self.refs[p] == 0:
                self.free.append(p)

    def copy_page(self, src, dst):
        for t in self.k + self.v:
            t[dst].copy_(t[src])

    # ---- slots ----------------------------------------------------------------------------------------------------
    def attach(self, slot, pages):
        """Gives `slot` the pages (already held for it) as its positions 0.."""
        self.owned[slot] = list(pages)
        self.host[slot].zero_()
        self.host[slot, :len(pages)] = torch.tensor(pages, dtype=torch.int32)
        self.dirty = True

    def attach_prefix(self, slot, prefix):
        """`slot` samples from `prefix`: its full pages shared, its partial last page copied. False if no page is
        free for the copy."""
        full = prefix.length // self.page_size
        shared = prefix.pages[:full]
        own = []
        if full < len(prefix.pages):
            own = self.take(1)
            if own is None:
                return False
            self.copy_page(prefix.pages[full], own[0])
        self.hold(shared)
        self.attach(slot, shared + own)
        return True

    def grow(self, slot, tokens):
        """Makes `slot` hold positions 0..tokens-1. False (nothing taken) if not enough pages are free."""
        more = self.pages_for(tokens) - len(self.owned[slot])
        if more <= 0:
            return True
        got = self.take(more)
        if got is None:
            return False
        n = len(self.owned[slot])
        self.owned[slot] += got
        self.host[slot, n:n + more] = torch.tensor(got, dtype=torch.int32)
        self.dirty = True
        return True

    def release(self, slot):
        self.drop(self.owned[slot])
        self.owned[slot] = []
        self.host[slot].zero_()
        self.dirty = True

    def upload(self):
        if self.dirty:
            self.table.copy_(self.host)
            self.dirty = False

    # ---- writing keys/values --------------------------------------------------------------------------------------
    def flat_index(self, pages, positions):
        """Physical row (page * P + offset) of each position, for the host-side lists `pages` (by position order)."""
        p = self.page_size
        return [pages[t // p] * p + t % p for t in positions]

    def flat(self, layer):
        """A layer's key and value pages viewed as (num_pages x P, Hkv, D): one row per token slot."""
        return tuple(x[layer].view(-1, *x[layer].shape[2:]) for x in (self.k, self.v))

    def write(self, layer, rows, k, v):
        """k/v (N, Hkv, D) into the flat physical rows `rows` (N,) long."""
        kf, vf = self.flat(layer)
        kf[rows] = k
        vf[rows] = v

    def bytes(self):
        return sum(t.numel() * t.element_size() for t in self.k + self.v)
