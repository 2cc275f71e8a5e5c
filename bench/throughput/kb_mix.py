"""The RL mix on KernelBench problems: per problem 16 candidates derived from the problem's own reference, each
with the verdict an evaluator that is not fooled must give.

A problem is a KernelBench file `<dir>/KernelBench/level<N>/<id>_<Name>.py` (class Model, get_inputs,
get_init_inputs). Every candidate carries a copy of the reference with `Model` renamed `_KBReference` and defines
`class ModelNew(_KBReference)`, so seeded construction gives it the reference's weights, and passes the forward's
output through an epilogue:

- correct (10): the epilogue copies the output through a Triton kernel (each candidate its own kernel name and
  block size, so no compile cache is shared between candidates); with `epilogue="torch"` (CPUs without Triton)
  the copy is `torch.clone`. This is the reference renamed with a real custom-kernel launch, not a rewrite:
  speedups stay near 1 and the GPU work is the reference's plus one copy.
- wrong_values: the epilogue scales and offsets (1.5 x + 0.25).
- wrong_shape: the output loses its last row (off by one in the first dimension).
- compile_error: a Python syntax error in forward's signature.
- runtime_error: the Triton launch misses an argument (TypeError at the launch); torch epilogue: an index error.
- timeout: forward never returns (the candidate's timeout_s is short).
- hack: family F of the catalogue (research/kernelbench.md §4): the output memoised by input address (the CUDA-L1
  pattern), inputs kept alive so an address is never reused within a run. Correct values on every fresh input
  set; a harness that times 100 calls on the same tensors and never checks their outputs is fooled (KernelBench's
  harness and KernelGYM's are expected to call it correct, with an inflated speedup); one that refills timed inputs
  in place gets stale outputs.
"""
import glob
import os
import re

KINDS = ("correct", "wrong_values", "wrong_shape", "compile_error", "runtime_error", "timeout", "hack")
# Order within a problem: failures spread out, so a run cut short by its time budget still sees a mix.
ORDER = ("correct", "correct", "wrong_values", "correct", "correct", "compile_error", "correct", "hack", "correct",
         "runtime_error", "correct", "timeout", "correct", "wrong_shape", "correct", "correct")
EXPECTED = {
    "correct": "correct",
    "wrong_values": "incorrect",
    "wrong_shape": "incorrect",
    "compile_error": "compile_error",
    "runtime_error": "runtime_error",
    "timeout": "timeout",
    "hack": "hacked",
}
# Harnesses expected to be fooled, and what they are expected to say instead.
FOOLED = {"hack": {"kernelbench": "correct", "kernelgym": "correct"}}
BLOCKS = (256, 512, 1024, 2048)

TRITON_EPILOGUE = '''
import triton
import triton.language as tl


@triton.jit
def {name}(src_ptr, dst_ptr, n, scale, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask) * scale + shift, mask=mask)


def _epilogue(t):
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return t
    src = t.detach().contiguous()
    dst = torch.empty_like(src)
    n = src.numel()
    {launch}
    return dst{shape}
'''
TRITON_LAUNCH = "{name}[(triton.cdiv(n, {block}),)](src, dst, n, {scale}, {shift}, BLOCK={block})"
TRITON_BAD_LAUNCH = "{name}[(triton.cdiv(n, {block}),)](src, dst, {scale}, {shift}, BLOCK={block})"
TORCH_EPILOGUE = '''

def _epilogue(t):
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return t
    dst = {expr}
    return dst{shape}
'''
MODEL_NEW = '''

class ModelNew(_KBReference):
    def forward(self{sep} *args, **kwargs):{before}
        out = super().forward(*args, **kwargs){after}
        if isinstance(out, (tuple, list)):
            return type(out)(_epilogue(o) for o in out)
        return _epilogue(out)
'''
MEMO_LOOKUP = '''
        key = tuple((a.data_ptr(), tuple(a.shape)) if isinstance(a, torch.Tensor) else repr(a) for a in args)
        memo = self.__dict__.setdefault("_outputs", {})
        if key in memo:
            return _epilogue(memo[key][1])'''
MEMO_STORE = '''
        memo[key] = (args, out)  # the inputs stay alive: their addresses are never reused for other tensors'''
TIMEOUT_BODY = '''
        import time
        while True:
            time.sleep(0.05)'''
WRONG_SHAPE = "[:-1] if dst.dim() > 0 and dst.shape[0] > 1 else dst.unsqueeze(0)"


def list_problems(root, level):
    """(id, name, path) of every problem of a level, by id. `root` is a KernelBench checkout (or a folder shaped
    like one: KernelBench/level<N>/<id>_<Name>.py)."""
    out = []
    for p in glob.glob(os.path.join(root, "KernelBench", "level%d" % level, "*.py")):
        m = re.match(r"(\d+)_(.+)\.py$", os.path.basename(p))
        if m:
            out.append((int(m.group(1)), m.group(1) + "_" + m.group(2), p))
    return sorted(out)


def select_problems(problems, ids=None, count=None):
    """Problems whose id is in `ids` (in that order), else the first `count` (all when None)."""
    if ids:
        by_id = {p[0]: p for p in problems}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError("no problem with id %s in this level" % ", ".join(map(str, missing)))
        return [by_id[i] for i in ids]
    return problems[:count] if count else problems


def candidate_code(reference, kind, tag, block, epilogue):
    """Source of one candidate of `kind` derived from `reference` (KernelBench text defining class Model)."""
    base = re.sub(r"\bModel\b", "_KBReference", reference)
    scale, shift = ("1.5", "0.25") if kind == "wrong_values" else ("1.0", "0.0")
    shape = WRONG_SHAPE if kind == "wrong_shape" else ""
    if epilogue == "triton":
        name = "_epilogue_copy_" + tag
        launch = (TRITON_BAD_LAUNCH if kind == "runtime_error" else TRITON_LAUNCH).format(
            name=name, block=block, scale=scale, shift=shift)
        tail = TRITON_EPILOGUE.format(name=name, launch=launch, shape=shape)
    else:
        expr = "t.detach()[t.shape[0] + 7].clone()" if kind == "runtime_error" else (
            "t.detach().clone()" if scale == "1.0" else "t.detach() * %s + %s" % (scale, shift))
        tail = TORCH_EPILOGUE.format(expr=expr, shape=shape)
    model = MODEL_NEW.format(sep="" if kind == "compile_error" else ",",  # a missing comma: SyntaxError
                             before=MEMO_LOOKUP if kind == "hack" else (TIMEOUT_BODY if kind == "timeout" else ""),
                             after=MEMO_STORE if kind == "hack" else "")
    return base.rstrip() + "\n" + tail + model


def build_mix(root, level, ids=None, count=None, per_problem=16, epilogue="triton", timeout_s=300,
              timeout_candidate_s=15):
    """Candidates (dicts) for the chosen problems of `level`, problem by problem, each with its expected verdict."""
    mix = []
    for pid, name, path in select_problems(list_problems(root, level), ids, count):
        reference = open(path).read()
        if not re.search(r"^class Model\b", reference, re.M):
            continue
        kinds = (ORDER * (per_problem // len(ORDER) + 1))[:per_problem]
        for i, kind in enumerate(kinds):
            tag = "p%d_%02d" % (pid, i)
            mix.append({
                "id": "L%d-%d-%02d-%s" % (level, pid, i, kind),
                "level": level, "problem_id": pid, "problem": name, "kind": kind,
                "ref": reference,
                "kernel": candidate_code(reference, kind, tag, BLOCKS[i % len(BLOCKS)], epilogue),
                "timeout_s": timeout_candidate_s if kind == "timeout" else timeout_s,
                "expected": EXPECTED[kind],
                "fooled_expected": FOOLED.get(kind, {}),
            })
    return mix


def correct_only(mix):
    return [c for c in mix if c["kind"] == "correct"]
