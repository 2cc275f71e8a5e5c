"""Phase load: the job's code written to a file in the worker's scratch directory and imported, its class found, the
candidate's Triton kernels hooked so their launches are counted, and the model built with the constructor arguments
the reference's worker drew. Errors here are compile errors for a candidate and "invalid" for a reference.
"""
import importlib.util
import os
import sys

import torch

from . import evidence, extensions
from .protocol import Field, Role
from .runner import Reported, _no_grad, _perf_ns, describe, exc_kind, init_cuda, seed_all


def _pin_flags(allow_tf32):
    try:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
    except Exception:  # noqa: BLE001
        pass


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


def _hook_class(cls, attr, count, skip_warmup):
    """Wraps cls.attr (once) so that every call counts the kernel it launches."""
    orig = getattr(cls, attr)
    if getattr(orig, "_kgym_counted", False):
        return

    def counted(self, *a, **kw):
        if not (skip_warmup and kw.get("warmup", False)):
            count(getattr(self, "fn", None))
        return orig(self, *a, **kw)

    counted._kgym_counted = True
    setattr(cls, attr, counted)


def hook_triton_kernels(mod, counter):
    """Counts launches of every Triton kernel the candidate's module defines (counter[name]); returns their names.
    Evidence for the decoy rule: a Triton candidate whose own kernels never run. The hooks sit on the classes
    (JITFunction.run, and the interpreter's GridExecutor for TRITON_INTERPRET=1), because `kernel[grid]` looks
    __getitem__ up on the type."""
    by_fn = {}
    for attr, obj in list(vars(mod).items()):
        base = _triton_base(obj)
        fn = getattr(base, "fn", None) if base is not None else None
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
        _hook_class(_jit.JITFunction, "run", count, skip_warmup=True)
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import interpreter as _interp
        _hook_class(_interp.GridExecutor, "__call__", count, skip_warmup=False)
    except Exception:  # noqa: BLE001
        pass
    return sorted(by_fn.values())


def _build_failure(r, e, phase, tb):
    """A candidate's extension that failed to build (at import or in __init__) is a compile error."""
    b = extensions.build_error(e) if r.role == Role.CANDIDATE else None
    if b is None:
        return None
    rep = Reported("compile_error", phase, b[0], tb)
    rep.build_log = b[1]
    return rep


def _import(r, job, modname, err_kind):
    path = os.path.join(os.getcwd(), r.filename)
    with open(path, "w") as f:
        f.write(job[Field.CODE])
    t0 = _perf_ns()
    try:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        return mod
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, SystemExit):
            raise Reported(err_kind, "load", "the module called exit() while loading")
        detail, tb = describe(e, r.filename)
        raise _build_failure(r, e, "load", tb) or Reported(exc_kind(e, err_kind), "load", detail, tb)
    finally:
        r.load_s = (_perf_ns() - t0) / 1e9  # an extension's build (or its cache hit) happens here


def load(r, job):
    """Imports the job's code into runner `r` and finds its class."""
    r.device = job.get(Field.DEVICE, "cpu")
    if r.device.startswith("cuda"):
        init_cuda()  # context and driver threads exist before the baseline (cheap when already made at start)
    _pin_flags(bool(job.get(Field.ALLOW_TF32, False)))
    r.baseline = evidence.Baseline()
    os.environ["KGYM_TASK_SIZE"] = job.get(Field.SIZE) or "full"
    candidate = r.role == Role.CANDIDATE
    err_kind = "compile_error" if candidate else "invalid"
    if candidate and "cpp_extension" in job[Field.CODE]:
        try:
            extensions.keep_unchanged_build_files()  # a cached build is reused on old torch too
        except Exception:  # noqa: BLE001 - only costs a rebuild
            pass
    mod = _import(r, job, "kgym_candidate" if candidate else "kgym_reference", err_kind)
    cls_name = job[Field.CLASS_NAME]
    cls = getattr(mod, cls_name, None)
    if cls is None or not isinstance(cls, type):
        raise Reported(err_kind, "load", "no class %s defined in the %s code" % (cls_name, r.role))
    r.module, r.cls = mod, cls
    r.launches = {}
    r.triton_kernels = hook_triton_kernels(mod, r.launches) if candidate else []
    r.baseline.take_threads()


def build(r, init_args, seed, train_mode):
    """The model, built like the reference's: same seed, same constructor arguments, on the worker's device."""
    kind = "runtime_error" if r.role == Role.CANDIDATE else "invalid"
    try:
        seed_all(seed)
        with _no_grad():
            m = r.cls(*init_args)
        if not isinstance(m, torch.nn.Module):
            raise TypeError("%s(...) is not a torch.nn.Module" % r.cls.__name__)
        m = m.to(r.device)
        m.train(bool(train_mode))
        r.model = m
    except Reported:
        raise
    except BaseException as e:  # noqa: BLE001
        detail, tb = describe(e, r.filename)
        raise _build_failure(r, e, "init", tb) or Reported(exc_kind(e, kind), "init", detail, tb)
