"""The decode step's fused projection tail (kgym_train/fused_project.py: Qwen3's per-head RMSNorm of q and k, their
rotation, the key/value written into the pages) against the same in torch ops, as decoder.Qwen3View does it. Under
Triton's CPU interpreter in a subprocess; on a GPU, the compiled kernel and the engine's choice of it."""
import json
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
sys.path.insert(0, HERE)

import triton_interp  # noqa: E402
from kgym_train import fused_project as fp  # noqa: E402

SHAPES = [(4, 2, 16), (8, 8, 32), (16, 8, 64), (16, 8, 128)]
DTYPES = ["float32", "bfloat16"]


def compare(h, hkv, d, dtype, device="cpu"):
    dt = getattr(torch, dtype)
    args, flats = fp.probe_case(5, h, hkv, d, dt, device, seed=h + d)
    want_k, want_v = flats[0].clone(), flats[1].clone()
    want = fp.reference(*args[:8], want_k, want_v, args[10])
    got = fp.norm_rope_write(*args)
    scale = max(1.0, float(want.float().abs().max()))
    err = max(float((got.float() - want.float()).abs().max()), float((flats[0].float() - want_k.float()).abs().max()),
              float((flats[1].float() - want_v.float()).abs().max()))
    untouched = [r for r in range(flats[0].shape[0]) if r not in set(args[10].tolist())]
    return {"case": f"{h}-{hkv}-{d}-{dtype}", "err": err / scale,
            "others_zero": bool((flats[0][untouched] == 0).all() and (flats[1][untouched] == 0).all())}


@pytest.fixture(scope="module")
def interpreted():
    return triton_interp.run_cases(__file__)


@pytest.mark.parametrize("shape", SHAPES, ids=["-".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_tail_equals_the_torch_ops_under_the_interpreter(interpreted, shape, dtype):
    rec = interpreted["%d-%d-%d-%s" % (shape + (dtype,))]
    assert rec["err"] <= fp.TOLERANCE[getattr(torch, dtype)], rec
    assert rec["others_zero"], rec  # nothing written outside each row's destination


def test_the_cpu_engine_keeps_the_torch_ops():
    class View:
        heads, kv_heads, head_dim, dtype = 4, 2, 16, torch.bfloat16

        def project_parts(self, i, x):
            raise AssertionError("not on the CPU")
    assert fp.FusedProject(View(), "cpu").backend == "torch"


@pytest.mark.skipif(not (torch.cuda.is_available() and fp.HAS_TRITON), reason="needs CUDA and Triton")
def test_gpu_fused_tail_equals_the_torch_ops():
    for h, hkv, d in SHAPES:
        rec = compare(h, hkv, d, "bfloat16", device="cuda")
        assert rec["err"] <= fp.TOLERANCE[torch.bfloat16] and rec["others_zero"], rec


if __name__ == "__main__" and "--interpret" in sys.argv:
    for s in SHAPES:
        for dt in DTYPES:
            print(json.dumps(compare(*s, dt)), flush=True)
