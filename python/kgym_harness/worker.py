"""One worker process: the reference role (pristine, never sees candidate code) or the candidate role.

The supervisor drives everything over the private channel (see src/eval/wire.h and src/eval/worker_session.h);
this module only loads code, builds models, runs calls and reports raw facts: tensor bytes, host timestamps,
exceptions, and observations about the process (threads, processes, backend flags, aliasing). The verdict is
made in C++ from those facts.

Messages from the supervisor: job, trial (candidate), pool_set (candidate), timing, call, fetch, finish.
Messages to the supervisor: ready, init, trial_result, pool_set, start, done, outputs, error, note.
"""
import importlib.util
import os
import sys
import threading
import time
import traceback

import torch

from . import extensions, recorder, tensors, wire

# Captured before any untrusted code runs: the harness uses these objects, not whatever the module attributes
# point at later, so patching torch.cuda.synchronize or time.perf_counter does not change what is measured here
# (and the supervisor's own clock is the trusted one anyway).
_perf_ns = time.perf_counter_ns
_no_grad = torch.no_grad
_enable_grad = torch.enable_grad
_equal = torch.equal
_Tensor = torch.Tensor
_zero = torch.Tensor.zero_
_Parameter = torch.nn.Parameter
_current_frames = sys._current_frames
_cuda_sync = torch.cuda.synchronize
_manual_seed = torch.manual_seed
_traceback_format = traceback.format_exception

CANDIDATE_FILE = "candidate.py"
REFERENCE_FILE = "reference.py"


class Reported(Exception):
    """An error already classified; carries the message for the supervisor."""

    def __init__(self, kind, phase, detail, tb=""):
        super().__init__(detail)
        self.kind, self.phase, self.detail, self.tb = kind, phase, detail, tb


def _tail(text, n=4000):
    return text if len(text) <= n else "..." + text[-n:]


def _exc_kind(e, default):
    name = type(e).__name__
    msg = str(e)
    if isinstance(e, MemoryError) or "out of memory" in msg.lower() or "can't allocate memory" in msg \
            or name == "OutOfMemoryError":
        return "resource_exhausted"
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "triton.compiler" in type(e).__module__:
        return "compile_error"
    return default


def _user_frame(tb_exc, filename):
    """Line number and text of the deepest frame in the user's file, for a message a model can act on."""
    best = None
    for fr in tb_exc.stack:
        if fr.filename.endswith(filename):
            best = fr
    return best


def _describe(e, filename):
    te = traceback.TracebackException.from_exception(e)
    fr = _user_frame(te, filename)
    last = "".join(te.format_exception_only()).strip()
    if isinstance(e, SyntaxError):
        return "line %s: %s" % (e.lineno, last.splitlines()[-1]), "".join(te.format())
    where = " (line %d: %s)" % (fr.lineno, (fr.line or "").strip()) if fr else ""
    return last.splitlines()[-1] + where if last else type(e).__name__, "".join(te.format())


def _seed_all(seed):
    import random
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed % (2 ** 32))
    except Exception:  # noqa: BLE001
        pass
    _manual_seed(seed)


def _backend_flags():
    flags = {}
    try:
        flags["matmul.allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    except Exception:  # noqa: BLE001
        pass
    for k in ("allow_tf32", "benchmark", "deterministic", "enabled"):
        try:
            flags["cudnn." + k] = bool(getattr(torch.backends.cudnn, k))
        except Exception:  # noqa: BLE001
            pass
    try:
        flags["float32_matmul_precision"] = torch.get_float32_matmul_precision()
    except Exception:  # noqa: BLE001
        pass
    try:
        flags["matmul.allow_fp16_reduced_precision_reduction"] = \
            bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    except Exception:  # noqa: BLE001
        pass
    return flags


def _pin_flags(allow_tf32):
    try:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
    except Exception:  # noqa: BLE001
        pass


def _os_threads():
    try:
        out = {}
        for t in os.listdir("/proc/self/task"):
            try:
                with open("/proc/self/task/%s/comm" % t) as f:
                    out[t] = f.read().strip()
            except OSError:
                pass
        return out
    except OSError:
        return {}


def _other_processes(own_ns):
    """Processes besides ourselves and our init: in our own PID namespace that is everything the candidate
    started; without one, our children."""
    me = os.getpid()
    found = []
    try:
        entries = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in entries:
        if pid in (me, 1):
            continue
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
            fields = st[st.rfind(")") + 2:].split()
            state, ppid = fields[0], int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        if state == "Z":
            continue
        if ppid == me or own_ns:
            found.append(pid)
    return found


def _storage_span(t):
    try:
        st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        ptr = st.data_ptr()
        n = st.nbytes() if hasattr(st, "nbytes") else st.size() * t.element_size()
        return ptr, ptr + n
    except Exception:  # noqa: BLE001
        return None


def _as_list(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _init_cuda():
    torch.cuda.init()
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda").sum().item()


def _triton_base(obj):
    """The JIT function under autotuner/heuristics wrappers, or None when obj is not a Triton kernel."""
    for _ in range(8):
        name = type(obj).__name__
        if name in ("JITFunction", "InterpretedFunction") and callable(getattr(obj, "run", None)):
            return obj
        if name in ("Autotuner", "Heuristics") and hasattr(obj, "fn"):
            obj = obj.fn
            continue
        return None
    return None


def _hook_triton_kernels(mod, counter):
    """Counts launches of every Triton kernel the candidate's module defines (counter[name]); returns their names.
    Evidence for the decoy rule: a Triton candidate whose own kernels never run. The hooks sit on the classes
    (JITFunction.run, and the interpreter's GridExecutor for TRITON_INTERPRET=1), because `kernel[grid]` looks
    __getitem__ up on the type."""
    by_fn = {}
    for attr, obj in list(vars(mod).items()):
        base = _triton_base(obj)
        if base is None:
            continue
        fn = getattr(base, "fn", None)
        if fn is None or id(fn) in by_fn:
            continue
        name = getattr(fn, "__name__", attr)
        by_fn[id(fn)] = name
        counter.setdefault(name, 0)
    if not by_fn:
        return []

    def count(fn):
        k = by_fn.get(id(fn))
        if k is not None:
            counter[k] += 1

    try:
        from triton.runtime import jit as _jit
        cls = _jit.JITFunction
        if not getattr(cls.run, "_kgym_counted", False):
            orig = cls.run

            def run(self, *a, **kw):
                if not kw.get("warmup", False):
                    count(getattr(self, "fn", None))
                return orig(self, *a, **kw)

            run._kgym_counted = True
            cls.run = run
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import interpreter as _interp
        gcls = _interp.GridExecutor
        if not getattr(gcls.__call__, "_kgym_counted", False):
            gorig = gcls.__call__

            def call(self, *a, **kw):
                count(getattr(self, "fn", None))
                return gorig(self, *a, **kw)

            call._kgym_counted = True
            gcls.__call__ = call
    except Exception:  # noqa: BLE001
        pass
    return sorted(by_fn.values())


class Runner:
    """Holds one loaded model and runs calls on it the same way in every phase (same grad mode, same call
    path), so the code under test cannot tell correctness calls from timed ones."""

    def __init__(self, role, protections):
        self.role = role
        self.protections = protections
        self.device = "cpu"
        self.model = None
        self.pool = []
        self.live = None
        self.last_out = None
        self.flush_buf = None
        self.null_buf = None
        self.base_flags = {}
        self.base_threads = {}
        self.filename = CANDIDATE_FILE if role == "candidate" else REFERENCE_FILE

    # ----- loading -----
    def load(self, job):
        self.device = job.get("device", "cpu")
        if self.device.startswith("cuda"):
            _init_cuda()  # context and driver threads exist before the baseline (cheap when already made at start)
        torch.ones(1 << 16).sum().item()  # start the CPU thread pool before taking the thread baseline
        _pin_flags(bool(job.get("allow_tf32", False)))
        self.base_flags = _backend_flags()
        os.environ["KGYM_TASK_SIZE"] = job.get("size") or "full"
        path = os.path.join(os.getcwd(), self.filename)
        with open(path, "w") as f:
            f.write(job["code"])
        modname = "kgym_candidate" if self.role == "candidate" else "kgym_reference"
        phase = "load"
        err_kind = "compile_error" if self.role == "candidate" else "invalid"
        if self.role == "candidate" and "cpp_extension" in job["code"]:
            try:
                extensions.keep_unchanged_build_files()  # a cached build is reused on old torch too
            except Exception:  # noqa: BLE001 - only costs a rebuild
                pass
        t0 = _perf_ns()
        try:
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[modname] = mod
            spec.loader.exec_module(mod)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, SystemExit):
                raise Reported(err_kind, phase, "the module called exit() while loading")
            detail, tb = _describe(e, self.filename)
            raise self._build_failure(e, phase, tb) or Reported(_exc_kind(e, err_kind), phase, detail, tb)
        finally:
            self.load_s = (_perf_ns() - t0) / 1e9  # an extension's build (or its cache hit) happens here
        cls_name = job["class_name"]
        cls = getattr(mod, cls_name, None)
        if cls is None or not isinstance(cls, type):
            raise Reported(err_kind, phase, "no class %s defined in the %s code" % (cls_name, self.role))
        self.module = mod
        self.cls = cls
        self.launches = {}
        self.triton_kernels = _hook_triton_kernels(mod, self.launches) if self.role == "candidate" else []
        self.base_threads = _os_threads()
        self.base_py_threads = set(threading.enumerate())
        self.base_py_idents = set(_current_frames())

    def build(self, init_args, seed, train_mode):
        kind = "runtime_error" if self.role == "candidate" else "invalid"
        try:
            _seed_all(seed)
            with _no_grad():
                m = self.cls(*init_args)
            if not isinstance(m, torch.nn.Module):
                raise TypeError("%s(...) is not a torch.nn.Module" % self.cls.__name__)
            m = m.to(self.device)
            m.train(bool(train_mode))
            self.model = m
        except Reported:
            raise
        except BaseException as e:  # noqa: BLE001
            detail, tb = _describe(e, self.filename)
            raise self._build_failure(e, "init", tb) or Reported(_exc_kind(e, kind), "init", detail, tb)

    def _build_failure(self, e, phase, tb):
        """A candidate's extension that failed to build (at import or in __init__) is a compile error."""
        b = extensions.build_error(e) if self.role == "candidate" else None
        if b is None:
            return None
        rep = Reported("compile_error", phase, b[0], tb)
        rep.build_log = b[1]
        return rep

    # ----- calls -----
    def sync(self):
        if self.device.startswith("cuda"):
            _cuda_sync()

    def call(self, args, phase, tag=None, grad=False, sync=True):
        """tag: (recorder phase, index) for the kernel recorder; grad: run with autograd on (the decoy check);
        sync=False leaves the device running (a burst's calls follow each other without waiting)."""
        kind = "runtime_error" if self.role == "candidate" else "invalid"
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
            detail, tb = _describe(e, self.filename)
            raise Reported(_exc_kind(e, kind), phase, detail, tb)

    def inspect_output(self, out, args, originals, phase):
        """Facts about one call's result that need the process itself: returns a list of hack evidences."""
        evid = []
        outs = _as_list(out)
        in_spans = [s for s in (_storage_span(a) for a in args if isinstance(a, _Tensor)) if s]
        for i, o in enumerate(outs):
            if isinstance(o, _Tensor):
                if type(o) is not _Tensor and type(o) is not _Parameter:
                    evid.append(("lazy tensor / subclass", "output %d is a %s, not a torch.Tensor" %
                                 (i, type(o).__name__)))
                    continue
                if o.device.type != torch.device(self.device).type:
                    evid.append(("wrong device", "output %d is on %s, expected %s" % (i, o.device, self.device)))
                sp = _storage_span(o)
                if sp and o.numel() > 0:
                    for a0, a1 in in_spans:
                        if sp[0] < a1 and a0 < sp[1]:
                            evid.append(("output aliases input",
                                         "output %d shares storage with an input tensor" % i))
                            break
        if originals is not None:
            for k, (a, orig) in enumerate(zip(args, originals)):
                if isinstance(a, _Tensor) and not _equal(a, orig):
                    evid.append(("input mutation", "input %d was modified by forward" % k))
        flags = _backend_flags()
        changed = [k for k in flags if self.base_flags.get(k) != flags[k]]
        if changed:
            evid.append(("precision downgrade", "global backend flags changed: " +
                         ", ".join("%s %s->%s" % (k, self.base_flags.get(k), flags[k]) for k in changed)))
        new_py = [t for t in threading.enumerate() if t not in self.base_py_threads and t.is_alive()]
        # Threads started with the low-level _thread module are not in threading.enumerate(), and their OS name is
        # the interpreter's, but every thread running Python code has a frame here.
        listed = {t.ident for t in threading.enumerate()}
        raw_py = [i for i in _current_frames() if i not in self.base_py_idents and i not in listed]
        if new_py:
            evid.append(("thread injection", "%d thread(s) still running after forward returned: %s" %
                         (len(new_py), ", ".join(t.name for t in new_py[:4]))))
        elif raw_py:
            evid.append(("thread injection", "%d thread(s) started with _thread still running after forward "
                         "returned" % len(raw_py)))
        else:
            now = _os_threads()
            extra = [c for t, c in now.items() if t not in self.base_threads
                     and not c.startswith(("cuda", "pt_", "python", "torch"))]
            if extra and self.role == "candidate":
                evid.append(("thread injection", "native thread(s) started by the candidate: " +
                             ", ".join(extra[:4])))
        procs = _other_processes(bool(self.protections.get("pid_namespace")))
        if procs:
            evid.append(("stray process", "%d process(es) still running after forward returned (pids %s)" %
                         (len(procs), procs[:4])))
        return evid

    # ----- timing -----
    def prepare_timing(self, flush_mb):
        first = self.pool[0]
        self.live = [a.clone() if isinstance(a, _Tensor) else a for a in first]
        if self.device.startswith("cuda") and flush_mb > 0:
            self.flush_buf = torch.empty(int(flush_mb) << 18, dtype=torch.float32, device=self.device)
        self.null_buf = torch.empty(256, dtype=torch.float32, device=self.device) if self.device.startswith("cuda") \
            else None

    def refill(self, j):
        src = self.pool[j]
        with _no_grad():
            for a, s in zip(self.live, src):
                if isinstance(a, _Tensor):
                    a.copy_(s)
        if self.flush_buf is not None:
            self.flush_buf.zero_()
        self.sync()


def _send_error(sock, rep):
    h = {"type": "error", "kind": rep.kind, "phase": rep.phase, "detail": rep.detail, "traceback": _tail(rep.tb)}
    if getattr(rep, "build_log", None) is not None:
        h["extension_build"] = True
        h["build_log"] = rep.build_log
    wire.send(sock, h)


def _send_values(sock, header, groups):
    """groups: {name: list of values}. Small groups share the inline payload; a large group gets its own sealed
    memfd, so the supervisor can forward one group (the inputs) without exposing another (the outputs)."""
    descs_all, chunks, offset, fds = [], [], 0, []
    try:
        for name, values in groups.items():
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
        header["tensors"] = descs_all
        wire.send(sock, header, b"".join(chunks), fds)
    finally:
        tensors.close_fds(fds)


_SPARSE_SPIKES = 8  # nonzeros per tensor in the "sparse" trial


def _variant(values, variant, seed=0):
    if variant == "default":
        return values
    # Signed and wider than the task's own draw, so shortcuts that rely on U[0,1) inputs fail.
    widen = [isinstance(v, _Tensor) and v.is_floating_point() and v.numel() > 1 for v in values]
    big = [i for i, v in enumerate(values) if widen[i] and v.numel() >= 64] if variant == "sparse" else []
    out = [((v.float() - v.float().mean()) * 3.0).to(v.dtype) if w and i not in big else v
           for i, (v, w) in enumerate(zip(values, widen))]
    if not big:
        return out
    # A few nonzeros at random places, zero elsewhere, with magnitudes falling by 4x from one to the next across all
    # inputs: one element carries most of every sum. A kernel that skips elements (every second row, one block of a
    # reduction, then rescales) either misses it or counts it twice, an error of 50 % or more whatever the seed.
    g = torch.Generator().manual_seed(int(seed))
    ranks = torch.randperm(len(big) * _SPARSE_SPIKES, generator=g).tolist()
    for n, i in enumerate(big):
        v = values[i]
        scale = 3.0 * max(1.0, float(v.float().abs().max()))
        rank = torch.tensor(ranks[n * _SPARSE_SPIKES:(n + 1) * _SPARSE_SPIKES], dtype=torch.float64)
        sign = torch.randint(0, 2, (_SPARSE_SPIKES,), generator=g).to(torch.float64) * 2 - 1
        idx = torch.randint(0, v.numel(), (_SPARSE_SPIKES,), generator=g)
        flat = torch.zeros(v.numel(), dtype=torch.float64)
        flat[idx] = sign * scale * torch.pow(4.0, -rank)
        out[i] = flat.reshape(v.shape).to(dtype=v.dtype, device=v.device)
    return out


def _finite(values):
    for v in values:
        if isinstance(v, _Tensor) and v.is_floating_point() and not bool(torch.isfinite(v).all()):
            return False
    return True


def _make_inputs(mod, seed, device):
    _seed_all(seed)
    ctx = None
    if device.startswith("cuda") and hasattr(torch, "device") and hasattr(torch.device, "__enter__"):
        ctx = torch.device(device)
    if ctx is not None:
        with ctx:
            vals = list(mod.get_inputs())
    else:
        vals = list(mod.get_inputs())
    return [v.to(device) if isinstance(v, _Tensor) else v for v in vals]


def _copy_bandwidth(device):
    """GB/s of a device-to-device copy past the L2 (bytes read + written), the best of 6 (the roofline's bandwidth;
    measured here, in the reference's process, which never loads candidate code)."""
    n = 64 << 20  # floats: 256 MiB each way
    a = torch.ones(n, dtype=torch.float32, device=device)
    b = torch.empty_like(a)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(6):
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1)
        best = ms if best is None else min(best, ms)
    del a, b
    torch.cuda.empty_cache()
    return 2.0 * n * 4 / (best * 1e6)


def serve_reference(sock, r, job):
    mod = r.module
    if not hasattr(mod, "get_inputs") or not hasattr(mod, "get_init_inputs"):
        raise Reported("invalid", "load", "the reference defines no get_inputs()/get_init_inputs()")
    try:
        _seed_all(job["init_seed"])
        init_args = list(mod.get_init_inputs())
    except BaseException as e:  # noqa: BLE001
        detail, tb = _describe(e, r.filename)
        raise Reported("invalid", "init", "get_init_inputs() failed: " + detail, tb)
    if len(init_args) == 2 and init_args[0] == [] and isinstance(init_args[1], dict):
        raise Reported("invalid", "init", "keyword init inputs are not supported")
    r.build(init_args, job["init_seed"], job.get("train_mode", False))
    _send_values(sock, {"type": "init"}, {"init": init_args})
    for i, t in enumerate(job["trials"]):
        try:
            inputs = _make_inputs(mod, t["seed"], r.device)
        except BaseException as e:  # noqa: BLE001
            detail, tb = _describe(e, r.filename)
            raise Reported("invalid", "inputs", "get_inputs() failed: " + detail, tb)
        inputs = _variant(inputs, t.get("variant", "default"), t["seed"])
        out = _as_list(r.call(inputs, "correctness"))
        skipped = not _finite(out)
        if skipped and t.get("variant", "default") == "default":
            raise Reported("invalid", "correctness", "the reference output is not finite on its own inputs")
        _send_values(sock, {"type": "trial_result", "index": i, "skipped": skipped},
                     {"inputs": inputs, "outputs": out})
    seeds = job.get("pool_seeds", [])
    if seeds and job["trials"]:
        # Enough sets that refilled inputs change between calls (>= 2), as many as the byte budget allows.
        one = sum(v.numel() * v.element_size() for v in inputs + out if isinstance(v, _Tensor))
        seeds = seeds[:max(2, min(len(seeds), int(job.get("pool_budget_bytes", 1 << 28)) // max(1, one)))]
    for j, seed in enumerate(seeds):
        inputs = _make_inputs(mod, seed, r.device)
        out = _as_list(r.call(inputs, "pool"))
        r.pool.append(inputs)
        _send_values(sock, {"type": "pool_set", "index": j}, {"inputs": inputs, "outputs": out})
    if r.device.startswith("cuda") and job.get("measure_bandwidth", True):
        wire.send(sock, {"type": "note", "key": "device_copy_bandwidth_gbps", "value": _copy_bandwidth(r.device)})
    if job.get("reference_backend") in ("torch_compile", "torch-compile", "compile"):
        try:
            r.model = torch.compile(r.model)
        except BaseException as e:  # noqa: BLE001
            wire.send(sock, {"type": "note", "key": "reference_backend_error", "value": str(e)[:500]})


def _unpack_inputs(h, payload, device):
    """The inputs of a trial or pool-set message; the shared-memory fds that came with it are closed."""
    try:
        return tensors.unpack(h["inputs"], h["tensors"], payload, device, h.get("_fds", ()))
    finally:
        tensors.close_fds(h.get("_fds"))


def serve_candidate(sock, r, job, payload):
    init_args = tensors.unpack(job["init"], job["tensors"], payload, "cpu")
    r.build(init_args, job["init_seed"], job.get("train_mode", False))
    wire.send(sock, {"type": "ready", "triton_kernels": r.triton_kernels})
    while True:
        h, p = wire.recv(sock)
        t = h["type"]
        if t == "trial":
            args = _unpack_inputs(h, p, r.device)
            originals = [a.clone() if isinstance(a, _Tensor) else a for a in args]
            out = r.call(args, "correctness", (recorder.CORRECTNESS, h["index"]))
            evid = r.inspect_output(out, args, originals, "correctness")
            del originals
            if evid:
                wire.send(sock, {"type": "evidence", "items": [list(e) for e in evid]})
            _send_values(sock, {"type": "trial_result", "index": h["index"],
                                "triton_launches": sum(r.launches.values())}, {"outputs": _as_list(out)})
        elif t == "pool_set":
            r.pool.append(_unpack_inputs(h, p, r.device))
            wire.send(sock, {"type": "ok"})
        elif t == "timing":
            return h
        elif t == "finish":
            return None
        else:
            raise Reported("invalid", "protocol", "unexpected message %r" % t)


def _armed(sock, call):
    """Answers "armed" and waits for the supervisor's "go": its clock runs from sending "go" to our "done"."""
    wire.send(sock, {"type": "armed", "call": call})
    g, _ = wire.recv(sock)
    if g.get("type") != "go":
        raise Reported("invalid", "protocol", "expected go, got %r" % g.get("type"))


def _done(sock, call, t0):
    """The reply to a null call or a burst, which stops the supervisor's clock (self_ms: the worker's own time)."""
    wire.send(sock, {"type": "done", "call": call, "self_ms": (_perf_ns() - t0) / 1e6})


def timing_loop(sock, r, h):
    r.prepare_timing(h.get("flush_mb", 0))
    use_events = r.device.startswith("cuda")
    ev0 = ev1 = None
    if use_events:
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    wire.send(sock, {"type": "ok"})
    while True:
        h, _ = wire.recv(sock)
        t = h["type"]
        if t == "call":
            j = h["set"] % len(r.pool)
            r.refill(j)
            _armed(sock, h["call"])
            t0 = _perf_ns()
            if use_events:
                ev0.record()
            cid = h["call"]
            r.last_out = r.call(r.live, "timing", (recorder.WARMUP, -cid) if cid < 0 else (recorder.TIMING, cid))
            if use_events:
                ev1.record()
                ev1.synchronize()
            t1 = _perf_ns()
            rep = {"type": "done", "call": h["call"], "self_ms": (t1 - t0) / 1e6}
            if use_events:
                rep["event_ms"] = ev0.elapsed_time(ev1)
            wire.send(sock, rep)
        elif t == "null":
            # The harness's own call, bracketed like a timed one: one tiny kernel through captured functions and
            # the same synchronisation, no model code. Its bracket is this process's overhead per call (IPC,
            # launch, wake-up), which the supervisor takes off the candidate's brackets of the same process.
            _armed(sock, h["call"])
            t0 = _perf_ns()
            recorder.RECORDER.begin(recorder.HARNESS, h["call"])
            if r.null_buf is not None:
                _zero(r.null_buf)
            recorder.RECORDER.end()
            r.sync()
            _done(sock, h["call"], t0)
        elif t == "burst":
            # k calls back to back (the L2 flushed before each, no synchronisation until the last has finished),
            # or, with "model" false, the same flushes alone. The supervisor's brackets of the two give the
            # model's cost per call with the host's launch work overlapped by the device's, as in a training loop.
            j = h["set"] % len(r.pool)
            r.refill(j)  # flushes the L2 before the first call
            k = max(1, min(int(h.get("k", 1)), 64))
            model = bool(h.get("model", True))
            _armed(sock, h["call"])
            t0 = _perf_ns()
            for i in range(k):
                if i and r.flush_buf is not None:
                    _zero(r.flush_buf)
                if model:
                    r.call(r.live, "timing", (recorder.BURST, h["call"] * k + i), sync=False)
            r.sync()
            _done(sock, h["call"], t0)
        elif t == "fetch":
            j = h["set"] % len(r.pool)
            evid = r.inspect_output(r.last_out, r.live, r.pool[j], "timing") if r.role == "candidate" else []
            if evid:
                wire.send(sock, {"type": "evidence", "items": [list(e) for e in evid]})
            _send_values(sock, {"type": "outputs", "call": h["call"]}, {"outputs": _as_list(r.last_out)})
        elif t == "detect":
            # The decoy check's second run: the same inputs with autograd on (the timed calls were the run without).
            rep = {"type": "detected"}
            try:
                r.call(r.live, "detect", (recorder.DETECT_GRAD, 0), grad=True)
            except Reported as e:
                rep["error"] = "%s: %s" % (e.kind, e.detail)
            wire.send(sock, rep)
        elif t == "timeline":
            data, err = recorder.RECORDER.collect(r.sync)
            wire.send(sock, {"type": "timeline", "error": err}, data)
        elif t == "finish":
            return
        else:
            raise Reported("invalid", "protocol", "unexpected message %r" % t)


def serve(sock, role, protections):
    """Entry point in the sandboxed process. Returns the exit code."""
    sys.dont_write_bytecode = True
    if role in ("reference", "candidate") and os.environ.get("KGYM_CUPTI_LIB"):
        recorder.start_from_env()  # before CUDA initialises, so the context is recorded from its first kernel
    if role in ("reference", "candidate") and os.environ.get("CUDA_VISIBLE_DEVICES"):
        # The context is made before the hello, so a worker started ahead of need (a spare) is ready for work.
        try:
            _init_cuda()
        except Exception:  # noqa: BLE001 - the job's own load reports a broken device
            pass
    wire.send(sock, {"type": "hello", "role": role, "pid": os.getpid(), "protections": protections,
                     "recorder": recorder.RECORDER.error or "on"})
    if role == "probe":
        return 0
    try:
        job, payload = wire.recv(sock)
        r = Runner(role, protections)
        try:
            r.load(job)
        finally:
            if role == "candidate" and getattr(r, "load_s", None) is not None:
                wire.send(sock, {"type": "note", "key": "load_s", "value": r.load_s})
        if role == "reference":
            serve_reference(sock, r, job)
            wire.send(sock, {"type": "ready"})
            h, _ = wire.recv(sock)
            if h["type"] == "timing":
                timing_loop(sock, r, h)
        else:
            h = serve_candidate(sock, r, job, payload)
            if h is not None:
                timing_loop(sock, r, h)
        wire.send(sock, {"type": "bye"})
        return 0
    except Reported as rep:
        _send_error(sock, rep)
        return 0
    except wire.ChannelClosed:
        return 0
