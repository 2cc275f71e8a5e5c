"""In-process evidence: facts about one call that only the candidate's own process can see (its output tensors'
types and storage, its inputs afterwards, global backend flags, threads and processes left running). They travel to
the supervisor as evidence messages; the supervisor's rules (src/eval/hack_rules.h) decide. A candidate that patches
this module away loses only these facts: the supervisor watches threads and CPU time from outside as well.
"""
import os
import sys
import threading

import torch

from .protocol import Evidence, Role

_equal = torch.equal
_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_current_frames = sys._current_frames
_enumerate = threading.enumerate


class Baseline:
    """The process before the candidate's code ran: its backend flags (taken before its module is imported, so flags
    changed at import count) and its threads (taken after: threads started at import are the module's own)."""

    def __init__(self):
        self.flags = backend_flags()
        self.os_threads, self.py_threads, self.py_idents = {}, set(), set()

    def take_threads(self):
        self.os_threads = os_threads()
        self.py_threads = set(_enumerate())
        self.py_idents = set(_current_frames())


def backend_flags():
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


def os_threads():
    """{thread id: name} of this process, from /proc."""
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


def other_processes(own_ns):
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


def _outputs(r, outs, args):
    found = []
    in_spans = [s for s in (_storage_span(a) for a in args if isinstance(a, _Tensor)) if s]
    for i, o in enumerate(outs):
        if not isinstance(o, _Tensor):
            continue
        if type(o) is not _Tensor and type(o) is not _Parameter:
            found.append((Evidence.LAZY_TENSOR, "output %d is a %s, not a torch.Tensor" % (i, type(o).__name__)))
            continue
        if o.device.type != torch.device(r.device).type:
            found.append((Evidence.WRONG_DEVICE, "output %d is on %s, expected %s" % (i, o.device, r.device)))
        sp = _storage_span(o)
        if sp and o.numel() > 0:
            for a0, a1 in in_spans:
                if sp[0] < a1 and a0 < sp[1]:
                    found.append((Evidence.OUTPUT_ALIASES_INPUT, "output %d shares storage with an input tensor" % i))
                    break
    return found


def _threads(r):
    base = r.baseline
    new_py = [t for t in _enumerate() if t not in base.py_threads and t.is_alive()]
    # Threads started with the low-level _thread module are not in threading.enumerate(), and their OS name is the
    # interpreter's, but every thread running Python code has a frame here.
    listed = {t.ident for t in _enumerate()}
    raw_py = [i for i in _current_frames() if i not in base.py_idents and i not in listed]
    if new_py:
        return [(Evidence.THREAD_INJECTION, "%d thread(s) still running after forward returned: %s" %
                 (len(new_py), ", ".join(t.name for t in new_py[:4])))]
    if raw_py:
        return [(Evidence.THREAD_INJECTION, "%d thread(s) started with _thread still running after forward "
                 "returned" % len(raw_py))]
    extra = [c for t, c in os_threads().items() if t not in base.os_threads
             and not c.startswith(("cuda", "pt_", "python", "torch"))]
    if extra and r.role == Role.CANDIDATE:
        return [(Evidence.THREAD_INJECTION, "native thread(s) started by the candidate: " + ", ".join(extra[:4]))]
    return []


def after_call(r, out, args, originals):
    """Evidence about one call of runner `r`: its outputs against its inputs `args`, the inputs against their copies
    from before the call (`originals`, or None when not kept), the backend flags, threads and processes."""
    found = _outputs(r, as_list(out), args)
    if originals is not None:
        for k, (a, orig) in enumerate(zip(args, originals)):
            if isinstance(a, _Tensor) and not _equal(a, orig):
                found.append((Evidence.INPUT_MUTATION, "input %d was modified by forward" % k))
    flags = backend_flags()
    changed = [k for k in flags if r.baseline.flags.get(k) != flags[k]]
    if changed:
        found.append((Evidence.PRECISION_DOWNGRADE, "global backend flags changed: " +
                      ", ".join("%s %s->%s" % (k, r.baseline.flags.get(k), flags[k]) for k in changed)))
    found += _threads(r)
    procs = other_processes(bool(r.protections.get("pid_namespace")))
    if procs:
        found.append((Evidence.STRAY_PROCESS, "%d process(es) still running after forward returned (pids %s)" %
                      (len(procs), procs[:4])))
    return found


def as_list(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]
