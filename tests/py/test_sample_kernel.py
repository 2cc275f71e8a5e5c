"""The fused sampling kernel (kgym_train/sample_kernel.py) against sampling.sample, the torch draw it replaces on the
GPU: the same tokens for the same seeds and positions (greedy and sampled, a vocabulary limit below the logits'
width, widths that are not a multiple of the kernel's block), the same log-probs. Under Triton's CPU interpreter in a
subprocess; on a GPU, the compiled kernel and the engine's choice of it."""
import json
import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import triton_interp  # noqa: E402
from kgym_train import sample_kernel, sampling  # noqa: E402

CASES = [(1037, 1000), (5000, 5000), (300, 260), (4096, 4000)]
TEMPS = (0.0, 0.7, 1.0, 1.5)


def compare(v, vocab, t, device="cpu", rows=6):
    g = torch.Generator().manual_seed(v + int(10 * t))
    logits = (torch.randn((rows, v), generator=g) * 3).to(device)
    twin = 5 + sample_kernel.BLOCK_V if v > 5 + sample_kernel.BLOCK_V else 9  # same lane of a later block if any
    logits[0, 5] = logits[0, twin] = logits[0].max() + 1  # a tie: the first id wins, as torch.argmax
    temp = torch.full((rows,), t, device=device)
    seed = torch.randint(0, 2**62, (rows,), generator=g).to(device)
    step = torch.randint(0, 4096, (rows,), generator=g).to(device)
    none = torch.zeros(rows, dtype=torch.long, device=device)
    want = sampling.sample(logits, temp, none, torch.ones_like(temp), seed, step,
                           sampling.vocab_keys(vocab, device), False)
    got = sample_kernel.draw(logits, temp, seed, step, vocab)
    return {"case": f"{v}-{vocab}-{t}", "same": got[0].tolist() == want[0].tolist(),
            "err": float((got[1] - want[1]).abs().max()), "max_id": int(got[0].max())}


def interpret_main():
    for v, vocab in CASES:
        for t in TEMPS:
            print(json.dumps(compare(v, vocab, t)), flush=True)


@pytest.fixture(scope="module")
def interpreted():
    return triton_interp.run_cases(__file__)


@pytest.mark.parametrize("v,vocab", CASES)
@pytest.mark.parametrize("t", TEMPS)
def test_fused_draw_equals_the_torch_draw_under_the_interpreter(interpreted, v, vocab, t):
    rec = interpreted[f"{v}-{vocab}-{t}"]
    assert rec["same"], rec
    assert rec["err"] < 1e-5 and rec["max_id"] < vocab, rec


def test_the_cpu_engine_keeps_the_torch_draw():
    assert sample_kernel.Sampler(100, "cpu").backend == "torch"


@pytest.mark.skipif(not (torch.cuda.is_available() and sample_kernel.HAS_TRITON), reason="needs CUDA and Triton")
def test_gpu_fused_draw_equals_the_torch_draw():
    s = sample_kernel.Sampler(151936, "cuda")
    assert s.backend == "triton-fused", s.probe_error
    for t in TEMPS:
        rec = compare(151936 + 64, 151936, t, device="cuda", rows=64)
        assert rec["same"] and rec["err"] < 1e-4, rec


if __name__ == "__main__" and "--interpret" in sys.argv:
    interpret_main()
