"""The loaded model and the one path every call of every phase takes through it, so the code under test cannot tell
correctness calls from timed ones (same grad mode, same call path); errors as the supervisor wants them classified;
tensor values sent back as raw bytes.

Captured before any untrusted code runs: the harness uses the objects below, not whatever the module attributes point
at later, so patching torch.cuda.synchronize or time.perf_counter does not change what is measured here (and the
supervisor's own clock is the trusted one anyway).
"""
import sys
import time
import traceback

import torch

from . import channel, evidence, recorder, tensors
from .evidence import as_list  # noqa: F401  (the phases take it from here)
from .protocol import Field, Kind, Role

_perf_ns = time.perf_counter_ns
_no_grad = torch.no_grad
_enable_grad = torch.enable_grad
_Tensor = torch.Tensor
_zero = torch.Tensor.zero_
_current_frames = sys._current_frames
_cuda_sync = torch.cuda.synchronize
_CudaEvent = torch.cuda.Event
_manual_seed = torch.manual_seed

CANDIDATE_FILE = "candidate.py"
REFERENCE_FILE = "reference.py"


class Reported(Exception):
    """An error already classified; carries the message for the supervisor."""

    def __init__(self, kind, phase, detail, tb=""):
        super().__init__(detail)
        self.kind, self.phase, self.detail, self.tb = kind, phase, detail, tb


def tail(text, n=4000):
    return text if len(text) <= n else "..." + text[-n:]


def exc_kind(e, default):
    name = type(e).__name__
    msg = str(e)
    if isinstance(e, MemoryError) or "out of memory" in msg.lower() or "can't allocate memory" in msg \
            or name == "OutOfMemoryError":
        return "resource_exhausted"
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "triton.compiler" in type(e).__module__:
        return "compile_error"
    return default


def describe(e, filename):
    """One line a model can act on (with the line of the user's file where it happened) and the full traceback."""
    te = traceback.TracebackException.from_exception(e)
    fr = None
    for f in te.stack:  # the deepest frame in the user's file
        if f.filename.endswith(filename):
            fr = f
    last = "".join(te.format_exception_only()).strip()
    if isinstance(e, SyntaxError):
        return "line %s: %s" % (e.lineno, last.splitlines()[-1]), "".join(te.format())
    where = " (line %d: %s)" % (fr.lineno, (fr.line or "").strip()) if fr else ""
    return last.splitlines()[-1] + where if last else type(e).__name__, "".join(te.format())


def seed_all(seed):
    import random
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % (2 ** 32))
    except Exception:  # noqa: BLE001
        pass
    _manual_seed(seed)


def init_cuda():
    torch.cuda.init()
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda").sum().item()


def warm_libraries():
    """The math libraries' handles made before the hello (cuBLAS, cuBLASLt, cuDNN): their first use in a process costs
    0.1-2 s, which a worker started ahead of need (a spare) then pays while it waits, not in its job's first trial.
    Harness code on harness data: nothing of the job is loaded yet."""
    a = torch.ones(64, 64, device="cuda")
    (a @ a).sum().item()
    x = torch.ones(1, 4, 8, 8, device="cuda")
    torch.nn.functional.conv2d(x, torch.ones(4, 4, 3, 3, device="cuda")).sum().item()


class Runner:
    """One worker's model: built by load.py, called here the same way in every phase."""

    def __init__(self, role, protections):
        self.role = role
        self.protections = protections
        self.device = "cpu"
        self.model = None
        self.module = None
        self.cls = None
        self.load_s = None
        self.launches = {}
        self.triton_kernels = []
        self.pool = []
        self.live = None
        self.last_out = None
        self.flush_buf = None
        self.null_buf = None
        self.refilled = None  # the blocking event wait_device waits on
        self.baseline = None  # evidence.Baseline, taken once the module is loaded
        self.filename = CANDIDATE_FILE if role == Role.CANDIDATE else REFERENCE_FILE

    def sync(self):
        if self.device.startswith("cuda"):
            _cuda_sync()

    def call(self, args, phase, tag=None, grad=False, sync=True):
        """tag: (recorder phase, index) for the kernel recorder; grad: run with autograd on (the decoy check);
        sync=False leaves the device running (a burst's calls follow each other without waiting)."""
        kind = "runtime_error" if self.role == Role.CANDIDATE else "invalid"
        rec = recorder.RECORDER
        try:
            with (_enable_grad() if grad else _no_grad()):
                if tag is not None:
                    rec.begin(*tag)
                try:
                    out = self.model(*args)
                finally:
                    if tag is not None:
                        rec.end()
            if sync:
                self.sync()
            return out
        except Reported:
            raise
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, SystemExit):
                raise Reported("crashed", phase, "forward called exit()")
            detail, tb = describe(e, self.filename)
            raise Reported(exc_kind(e, kind), phase, detail, tb)

    def inspect_output(self, out, args, originals, phase):
        """Facts about one call's result that need the process itself: a list of (kind, detail) evidences."""
        return evidence.after_call(self, out, args, originals)

    # ----- timing inputs -----
    def prepare_timing(self, flush_mb):
        first = self.pool[0]
        self.live = [a.clone() if isinstance(a, _Tensor) else a for a in first]
        cuda = self.device.startswith("cuda")
        if cuda and flush_mb > 0:
            self.flush_buf = torch.empty(int(flush_mb) << 18, dtype=torch.float32, device=self.device)
        self.null_buf = torch.empty(256, dtype=torch.float32, device=self.device) if cuda else None

    def refill(self, j):
        """The live inputs get set j's values in place (same pointers, new contents); the L2 is flushed."""
        src = self.pool[j]
        with _no_grad():
            for a, s in zip(self.live, src):
                if isinstance(a, _Tensor):
                    a.copy_(s)
        if self.flush_buf is not None:
            self.flush_buf.zero_()
        self.wait_device()

    def wait_device(self):
        """Waits for the device's work without using the CPU (a blocking-sync event: the thread sleeps). This is the
        wait between timed calls, where the supervisor measures the CPU the process uses (src/eval/hack_rules.h,
        deferred work): a spinning synchronisation there costs CPU for as long as the device takes, which grows with
        whatever else runs on the GPU, and read as work done after the call. The previous call ended with a
        device-wide synchronisation, so the current stream holds all that is left."""
        if self.device.startswith("cuda"):
            if self.refilled is None:
                self.refilled = _CudaEvent(blocking=True)
            self.refilled.record()
            self.refilled.synchronize()


def _send_error(sock, rep):
    h = {Field.TYPE: Kind.ERROR, Field.KIND: rep.kind, Field.PHASE: rep.phase, Field.DETAIL: rep.detail,
         Field.TRACEBACK: tail(rep.tb)}
    if getattr(rep, "build_log", None) is not None:
        h[Field.EXTENSION_BUILD] = True
        h[Field.BUILD_LOG] = rep.build_log
    channel.send(sock, h)


def _send_values(sock, header, groups, steps=None, lent=None):
    """groups: {field: list of values}. Small groups share the inline payload; a large group gets its own sealed
    memfd, so the supervisor can forward one group (the inputs) without exposing another (the outputs).
    steps: a Steps whose times go into the header (as worker_s), with the packing's as "pack".
    lent: a buffer the supervisor lent for the outputs (tensors.lent_buffer): they go into it where they fit, and
    the reply names it as the region after its own fds."""
    descs_all, chunks, offset, fds, in_lent = [], [], 0, [], []
    try:
        for name, values in groups.items():
            packed = tensors.pack_into(values, lent) if lent is not None and name == Field.OUTPUTS else None
            if packed is not None:
                (items, descs), payload, fd = packed, b"", None
                in_lent = descs
            else:
                items, descs, payload, fd = tensors.pack(values, region=len(fds))
            if fd is not None:
                fds.append(fd)
            base = len(descs_all)
            for d in descs:
                if "region" not in d:
                    d["offset"] += offset
                descs_all.append(d)
            for it in items:
                if it["kind"] == "tensor":
                    it["index"] += base
            header[name] = items
            chunks.append(payload)
            offset += len(payload)
        for d in in_lent:
            d["region"] = len(fds)
        header[Field.TENSORS] = descs_all
        if steps is not None:
            steps.lap("pack")
            header[Field.WORKER_S] = steps.times
        channel.send(sock, header, b"".join(chunks), fds)
    finally:
        tensors.close_fds(fds)


class Steps:
    """The worker's own seconds per step of one exchange (reported in metadata as a profile, never trusted)."""

    def __init__(self):
        self.times = {}
        self._t = _perf_ns()

    def lap(self, name):
        now = _perf_ns()
        self.times[name] = round((now - self._t) / 1e9, 6)
        self._t = now


def send_evidence(sock, found):
    if found:
        channel.send(sock, {Field.TYPE: Kind.EVIDENCE, Field.ITEMS: [list(e) for e in found]})


def send_note(sock, key, value):
    channel.send(sock, {Field.TYPE: Kind.NOTE, Field.KEY: key, Field.VALUE: value})
