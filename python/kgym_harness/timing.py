"""Phase timing. The worker holds the timing pool's sets and one live copy of the inputs, refilled in place from a set
before every call; the supervisor brackets each call with its own clock, from its "go" to our "done" (see
src/sandbox/protocol.h). The times sent here (self_ms, event_ms) are reported, never trusted.
"""
import mmap

import torch

from . import channel, recorder, tensors
from .protocol import Field, Kind, Role
from .runner import Reported, _perf_ns, _send_values, _zero, as_list, send_evidence


def _armed(sock, call):
    """Answers "armed" and waits for the supervisor's "go": its clock runs from sending "go" to our "done"."""
    channel.send(sock, {Field.TYPE: Kind.ARMED, Field.CALL: call})
    g, _ = channel.recv(sock)
    if g.get(Field.TYPE) != Kind.GO:
        raise Reported("invalid", "protocol", "expected go, got %r" % g.get(Field.TYPE))


def _done(sock, call, t0, event_ms=None):
    """The reply that stops the supervisor's clock (self_ms: the worker's own time; event_ms: its CUDA events)."""
    rep = {Field.TYPE: Kind.DONE, Field.CALL: call, Field.SELF_MS: (_perf_ns() - t0) / 1e6}
    if event_ms is not None:
        rep[Field.EVENT_MS] = event_ms
    channel.send(sock, rep)


class _Events:
    """CUDA events around a timed call, where there is a device."""

    def __init__(self, cuda):
        self.pair = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) if cuda else None

    def start(self):
        if self.pair:
            self.pair[0].record()

    def stop_ms(self):
        if not self.pair:
            return None
        self.pair[1].record()
        self.pair[1].synchronize()
        return self.pair[0].elapsed_time(self.pair[1])


def _timed_call(sock, r, h, events):
    # The last call's outputs go before this call makes its own, so the device allocator hands it their memory: held
    # across the call, they and a kept copy of them left no free block, and the call after every kept fetch paid a
    # fresh device allocation inside its bracket (5-35 ms on a busy H100, ~10 of 100 calls of a 32 MB-output problem).
    r.last_out = None
    r.refill(h[Field.SET] % len(r.pool))
    cid = h[Field.CALL]
    _armed(sock, cid)
    t0 = _perf_ns()
    events.start()
    r.last_out = r.call(r.live, "timing", (recorder.WARMUP, -cid) if cid < 0 else (recorder.TIMING, cid))
    _done(sock, cid, t0, events.stop_ms())


def _null_call(sock, r, h):
    """The harness's own call, bracketed like a timed one: one tiny kernel through captured functions and the same
    synchronisation, no model code. Its bracket is this process's overhead per call (IPC, launch, wake-up), which the
    supervisor takes off the candidate's brackets of the same process."""
    _armed(sock, h[Field.CALL])
    t0 = _perf_ns()
    recorder.RECORDER.begin(recorder.HARNESS, h[Field.CALL])
    if r.null_buf is not None:
        _zero(r.null_buf)
    recorder.RECORDER.end()
    r.sync()
    _done(sock, h[Field.CALL], t0)


def _burst(sock, r, h):
    """k calls back to back (the L2 flushed before each, no synchronisation until the last has finished), or, with
    "model" false, the same flushes alone. The supervisor's brackets of the two give the model's cost per call with
    the host's launch work overlapped by the device's, as in a training loop."""
    r.refill(h[Field.SET] % len(r.pool))  # flushes the L2 before the first call
    k = max(1, min(int(h.get(Field.K, 1)), 64))
    model = bool(h.get(Field.MODEL, True))
    _armed(sock, h[Field.CALL])
    t0 = _perf_ns()
    for i in range(k):
        if i and r.flush_buf is not None:
            _zero(r.flush_buf)
        if model:
            r.call(r.live, "timing", (recorder.BURST, h[Field.CALL] * k + i), sync=False)
    r.sync()
    _done(sock, h[Field.CALL], t0)


def _nbytes(values):
    return sum(v.numel() * v.element_size() for v in values)


def _off_heap_copy(v):
    """A CPU tensor's copy in memory of its own (an anonymous mapping), not the allocator's heap. A kept copy made
    there took the heap's next block, so the next timed call's output landed on pages never touched before: ~0.85 ms
    of page faults inside the bracket of every call after a kept one (a 2 MiB output on the CI machine), which the
    fresh-set caching rule read as caching on a correct candidate."""
    n = v.numel() * v.element_size()
    if n == 0:
        return v.detach().clone()
    out = torch.frombuffer(mmap.mmap(-1, n), dtype=torch.uint8, count=n).view(v.dtype).view(v.shape)
    out.copy_(v.detach())
    return out


class _Kept:
    """Copies of fetched calls' outputs, made on the outputs' own device, held until the supervisor asks for them
    after the timed part: the copy costs the device a read and a write; the transfer and the comparison then happen
    outside the timing lock. Within `budget` bytes and, for outputs on a GPU, only while the device keeps more than
    `keep_free` of its memory free after the copy (other evaluations share it); a call past either, or one whose
    outputs are not plain tensors, is sent at once. `mem_info(device)`: (free, total) bytes (tests replace it)."""

    def __init__(self, keep_mb, keep_free=0.0, mem_info=None):
        self.budget = int(max(0.0, float(keep_mb or 0)) * (1 << 20))
        self.keep_free = min(1.0, max(0.0, float(keep_free or 0)))
        self.mem_info = mem_info or torch.cuda.mem_get_info
        self.held = {}

    @staticmethod
    def _devices(values):
        return {v.device for v in values if v.device.type == "cuda"}

    def _device_has_room(self, values, nbytes):
        if self.keep_free <= 0:
            return True
        for d in self._devices(values):
            free, total = self.mem_info(d)
            if free - nbytes < self.keep_free * total:
                return False
        return True

    @property
    def used(self):
        return sum(_nbytes(values) for values in self.held.values())

    def take(self, call, out):
        values = as_list(out)
        if not all(type(v) is torch.Tensor for v in values):  # noqa: E721 (a subclass is sent as it is)
            return False
        nbytes = _nbytes(values)
        if call in self.held or self.used + nbytes > self.budget or not self._device_has_room(values, nbytes):
            return False
        with torch.no_grad():
            self.held[call] = [_off_heap_copy(v) if v.device.type == "cpu" else v.detach().clone() for v in values]
        return True

    def give(self, call):
        values = self.held.pop(call, None)
        if values is None:
            raise Reported("invalid", "protocol", "no kept outputs for call %r" % call)
        return values


def _fetch(sock, r, h, kept):
    found = r.inspect_output(r.last_out, r.live, r.pool[h[Field.SET] % len(r.pool)], "timing") \
        if r.role == Role.CANDIDATE else []
    send_evidence(sock, found)
    if h.get(Field.KEEP) and not found and kept.take(h[Field.CALL], r.last_out):
        channel.send(sock, {Field.TYPE: Kind.KEPT, Field.CALL: h[Field.CALL]})
        return
    _send_values(sock, {Field.TYPE: Kind.OUTPUTS, Field.CALL: h[Field.CALL]}, {Field.OUTPUTS: as_list(r.last_out)})


def _fetch_kept(sock, h, kept):
    try:
        lent = tensors.lent_buffer(h, h.get("_fds"))
    finally:
        tensors.close_fds(h.get("_fds"))
    _send_values(sock, {Field.TYPE: Kind.OUTPUTS, Field.CALL: h[Field.CALL]}, {Field.OUTPUTS: kept.give(h[Field.CALL])},
                 lent=lent)


def _detect(sock, r):
    """The decoy rule's second run: the same inputs with autograd on (the timed calls were the run without)."""
    rep = {Field.TYPE: Kind.DETECTED}
    try:
        r.call(r.live, "detect", (recorder.DETECT_GRAD, 0), grad=True)
    except Reported as e:
        rep[Field.ERROR] = "%s: %s" % (e.kind, e.detail)
    channel.send(sock, rep)


def timing_loop(sock, r, h):
    """Serves the timing phase that message `h` (timing) starts, until the supervisor says finish."""
    r.prepare_timing(h.get(Field.FLUSH_MB, 0))
    events = _Events(r.device.startswith("cuda"))
    kept = _Kept(h.get(Field.KEEP_MB, 0), h.get(Field.KEEP_FREE, 0))
    channel.send(sock, {Field.TYPE: Kind.OK})
    while True:
        h, _ = channel.recv(sock)
        t = h[Field.TYPE]
        if t == Kind.CALL:
            _timed_call(sock, r, h, events)
        elif t == Kind.NULL:
            _null_call(sock, r, h)
        elif t == Kind.BURST:
            _burst(sock, r, h)
        elif t == Kind.FETCH:
            _fetch(sock, r, h, kept)
        elif t == Kind.FETCH_KEPT:
            _fetch_kept(sock, h, kept)
        elif t == Kind.DETECT:
            _detect(sock, r)
        elif t == Kind.TIMELINE:
            data, err = recorder.RECORDER.collect(r.sync)
            channel.send(sock, {Field.TYPE: Kind.TIMELINE, Field.ERROR: err}, data)
        elif t == Kind.FINISH:
            return
        else:
            raise Reported("invalid", "protocol", "unexpected message %r" % t)
