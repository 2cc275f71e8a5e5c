"""Describes the task suite without running it: shapes, parameter sizes and bytes moved.

Inputs are created on torch's "meta" device (shapes only, no memory), so the full size can be
described on a small machine. "Bytes moved" is the roofline floor's traffic: every input and
parameter read once plus every output written once (intermediates not counted).

    python3 tasks/describe.py [--size full|medium|small] [--markdown]
"""
import argparse
import contextlib
import importlib.util
import json
import os
import sys

TASKS_DIR = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def meta_factories(torch):
    """Makes torch.randn/rand/randint/... inside get_inputs() return meta tensors."""
    names = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "randn_like", "rand_like")
    saved = {n: getattr(torch, n) for n in names}

    def wrap(fn):
        def on_meta(*args, **kwargs):
            kwargs["device"] = "meta"
            return fn(*args, **kwargs)
        return on_meta

    try:
        for n in names:
            setattr(torch, n, wrap(saved[n]))
        yield
    finally:
        for n, fn in saved.items():
            setattr(torch, n, fn)


def _nbytes(t):
    return t.numel() * t.element_size()


def describe_task(task_id, path, size):
    import torch
    saved_size = os.environ.get("KGYM_TASK_SIZE")
    os.environ["KGYM_TASK_SIZE"] = size  # read by the task module at import
    try:
        spec = importlib.util.spec_from_file_location(f"kgym_describe_{task_id.replace('/', '_')}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved_size is None:
            del os.environ["KGYM_TASK_SIZE"]
        else:
            os.environ["KGYM_TASK_SIZE"] = saved_size
    with meta_factories(torch):
        inputs = module.get_inputs()
        init = module.get_init_inputs()
    # Parameters are small enough to build for real; only their shapes are used.
    model = module.Model(*init)
    params = list(model.parameters()) + list(model.buffers())
    model = model.to("meta")
    with torch.no_grad():
        out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    tensors_in = [x for x in inputs if isinstance(x, torch.Tensor)]
    in_bytes = sum(_nbytes(x) for x in tensors_in)
    param_bytes = sum(_nbytes(p) for p in params)
    out_bytes = sum(_nbytes(o) for o in outs)
    doc = (module.__doc__ or "").strip().split("\n")[0]
    return {
        "task": task_id,
        "level": int(task_id.split("/")[0][len("level"):]),
        "what": doc,
        "input_shapes": [list(x.shape) for x in tensors_in],
        "output_shapes": [list(o.shape) for o in outs],
        "input_bytes": in_bytes,
        "param_bytes": param_bytes,
        "output_bytes": out_bytes,
        "bytes_moved": in_bytes + param_bytes + out_bytes,
    }


def all_tasks():
    out = []
    for level in sorted(os.listdir(TASKS_DIR)):
        level_dir = os.path.join(TASKS_DIR, level)
        if level.startswith("level") and os.path.isdir(level_dir):
            for fname in sorted(os.listdir(level_dir)):
                if fname.endswith(".py") and not fname.startswith("_"):
                    out.append((f"{level}/{fname[:-3]}", os.path.join(level_dir, fname)))
    return out


def _fmt_bytes(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=("full", "medium", "small"), default="full")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table instead of JSON lines")
    args = parser.parse_args(argv)
    rows = [describe_task(task_id, path, args.size) for task_id, path in all_tasks()]
    if not args.markdown:
        for row in rows:
            print(json.dumps(row))
        return 0
    print("| task | inputs | output | bytes moved |")
    print("|---|---|---|---|")
    for r in rows:
        shapes = ", ".join("×".join(map(str, s)) for s in r["input_shapes"])
        outs = ", ".join("×".join(map(str, s)) or "scalar" for s in r["output_shapes"])
        print(f"| {r['task']} | {shapes} | {outs} | {_fmt_bytes(r['bytes_moved'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
