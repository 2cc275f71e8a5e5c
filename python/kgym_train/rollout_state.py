"""What the rollout engine serves and keeps per slot: a Request (one sequence to sample, filled in as it runs),
`sample_seed` (the seed of the k-th sequence of a seeded request), and _State (the device-side vectors of every slot
and a chunk's output rows). rollout.py's docstring says how the engine uses them."""
import threading

import torch


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
        self.resume = False  # evicted after it started: re-admission recomputes its context
        self.order = 0  # admission order (the engine's), for choosing whom to evict
        self.shared = 0  # leading tokens of its context in pages shared with the other samples of its prompt
        self.group = None  # the serial of the Prefix it shares them through

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
