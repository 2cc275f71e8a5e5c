"""Decode attention over a paged KV cache (kgym_train/paged_attention.py).

  reference      equals plain dense attention (each row's keys laid out contiguously, computed head by head in
                 float64) for GQA groups 1, 2, 4, page sizes 4 and 16, lengths 1 / a page multiple / ragged, rows
                 sharing physical pages, and wild values in the block-table entries past a row's pages.
  paged_decode   (the Triton kernel) equals reference under Triton's CPU interpreter for the same cases, fp32, fp16
                 and bf16, with one split, several, and the heuristic's; run in a subprocess (this file as a script)
                 with TRITON_INTERPRET=1 so the setting never leaks into other tests. Triton is looked up on the
                 normal import path and, if set, in $KGYM_TRITON_PATH; without it those tests are skipped.
                 Tolerances (max abs error, inputs ~N(0, 1)): fp32 1e-5, fp16 3e-3, bf16 2e-2 (about two units in the
                 last place of outputs of magnitude ~1: both results are rounded to the input dtype, and the kernel
                 rounds the probabilities to it before the second product).
  GPU            (skipped without CUDA and Triton) PagedDecode picks the kernel and it equals reference in bf16 at a
                 rollout-like shape (H 16, Hkv 8, D 128, contexts ~2400 sharing 1536-token prompts), also when
                 captured in a CUDA graph.
"""
import json
import math
import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
PYTHON = os.environ.get("KGYM_PYTHON", sys.executable)

from kgym_train import paged_attention as pa  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_interp  # noqa: E402

TOLERANCE = {"float32": 1e-5, "float16": 3e-3, "bfloat16": 2e-2}
WILD = (1 << 30, -7, 123456789)  # stale block-table values: any read through them would fault


def make_case(groups, page_size, dtype=torch.float32, kv_heads=2, head_dim=64, seed=0):
    """Five rows: lengths 1, 3 pages exactly, 2 pages + 3, 5 pages - 1, 2 pages; rows 1-3 share their first two
    physical pages (a prompt), row 4 shares row 1's first page; a sixth block-table row and two columns past
    `pages`, and every entry past a row's pages, hold wild values."""
    gen = torch.Generator().manual_seed(seed)
    p = page_size
    used = [1, 3 * p, 2 * p + 3, 5 * p - 1, 2 * p]
    pages = 5
    own = {0: [9], 1: [0, 1, 2], 2: [0, 1, 3], 3: [0, 1, 4, 5, 6], 4: [0, 8]}
    table = torch.tensor([[WILD[(b + j) % 3] for j in range(pages + 2)] for b in range(6)], dtype=torch.int64)
    for b, ids in own.items():
        table[b, :len(ids)] = torch.tensor(ids)
    table = table.to(torch.int32)  # 1 << 30 and 123456789 fit; a wild entry stays wild
    shape = (10, p, kv_heads, head_dim)
    k = torch.randn(shape, generator=gen).to(dtype)
    v = torch.randn(shape, generator=gen).to(dtype)
    q = torch.randn((5, kv_heads * groups, head_dim), generator=gen).to(dtype)
    return q, k, v, table, torch.tensor(used, dtype=torch.int32), pages


def dense(q, k_pages, v_pages, table, used, scale):
    """Row by row, head by head, in float64: the row's keys/values copied out page by page, then softmax(q K^T) V."""
    b_, h_, d_ = q.shape
    p, kv_heads = k_pages.shape[1], k_pages.shape[2]
    out = torch.zeros((b_, h_, d_), dtype=torch.float64)
    for b in range(b_):
        n = int(used[b])
        ids = [int(table[b, j]) for j in range(-(-n // p))]
        keys = torch.cat([k_pages[i] for i in ids])[:n].double()
        vals = torch.cat([v_pages[i] for i in ids])[:n].double()
        for h in range(h_):
            kvh = h // (h_ // kv_heads)
            w = torch.softmax(keys[:, kvh] @ q[b, h].double() * scale, 0)
            out[b, h] = w @ vals[:, kvh]
    return out


@pytest.mark.parametrize("page_size", [4, 16])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_reference_equals_dense(groups, page_size):
    case = make_case(groups, page_size)
    scale = 1 / math.sqrt(case[0].shape[-1])
    got = pa.reference(*case, scale)
    want = dense(*case[:5], scale)
    assert got.dtype == torch.float32 and got.shape == case[0].shape
    assert float((got.double() - want).abs().max()) < 1e-5


def test_reference_ignores_stale_entries_and_other_rows_pages():
    """Changing the wild entries, or a page no row of interest uses, leaves the result alone; changing a key of a
    shared page changes every row sharing it."""
    case = make_case(2, 4)
    q, k, v, table, used, pages = case
    base = pa.reference(*case, 0.125)
    table2 = table.clone()
    table2[0, 1:] = 0
    table2[2, 3:] = 9
    assert torch.equal(pa.reference(q, k, v, table2, used, pages, 0.125), base)
    k2 = k.clone()
    k2[7] += 5.0  # page 7 belongs to no row
    assert torch.equal(pa.reference(q, k2, v, table, used, pages, 0.125), base)
    k2[0, 0] += 5.0  # shared by rows 1-4
    moved = (pa.reference(q, k2, v, table, used, pages, 0.125) - base).abs().amax((1, 2))
    assert moved[0] == 0 and bool((moved[1:] > 1e-4).all())


def test_paged_decode_on_cpu_is_reference():
    dec = pa.PagedDecode(8, 2, 64, 16, torch.float32, "cpu")
    assert dec.backend == "reference"
    case = make_case(4, 16)
    assert torch.equal(dec(*case), pa.reference(*case, 1 / 8))


def test_choose_splits():
    assert pa.choose_splits(256, 8, 40, 64) == 1  # 2048 programs fill the card
    few = pa.choose_splits(4, 8, 40, 64)
    assert 1 < few <= pa.MAX_SPLITS and 40 * 64 // few >= pa.MIN_SPLIT_TOKENS
    assert pa.choose_splits(4, 8, 2, 64) == 1  # 128 tokens: too short to split
    assert pa.choose_splits(1, 1, 10000, 64) == pa.MAX_SPLITS
    chunk, splits = pa._split_plan(7, 16, 3, 32)
    assert chunk % 32 == 0 and (splits - 1) * chunk < 7 * 16 <= splits * chunk


# ---- the Triton kernel under the interpreter ----------------------------------------------------------------------
INTERPRET_CASES = [(dt, g, p, s, 16) for dt in ("float32", "float16", "bfloat16") for g in (1, 2, 4)
                   for p in (4, 16) for s in (1, 3, None)] + [("float32", 8, 16, 2, 32), ("bfloat16", 8, 4, None, 64)]


def _case_name(dt, g, p, s, bn):
    return f"{dt}-g{g}-p{p}-splits{s}-bn{bn}"


def interpret_main():
    """Runs every INTERPRET_CASES case through paged_decode (this process has TRITON_INTERPRET=1) and prints one
    JSON line each: the max abs error against reference."""
    for dt, g, p, s, bn in INTERPRET_CASES:
        case = make_case(g, p, getattr(torch, dt), head_dim=128 if bn == 32 else 64, seed=g + p)
        scale = 1 / math.sqrt(case[0].shape[-1])
        want = pa.reference(*case, scale).float()
        try:
            got = pa.paged_decode(*case, scale, splits=s, block_n=bn)
            rec = {"err": float((got.float() - want).abs().max()), "dtype": str(got.dtype)}
        except Exception as e:
            rec = {"error": repr(e)}
        print(json.dumps(dict(rec, case=_case_name(dt, g, p, s, bn))), flush=True)


needs_triton = pytest.mark.skipif(not triton_interp.available(),
                                  reason="triton is not importable (set KGYM_TRITON_PATH to a pip --target dir "
                                         "holding triton)")


@pytest.fixture(scope="module")
def interpreted():
    return triton_interp.run_cases(__file__)


@needs_triton
@pytest.mark.parametrize("dt,g,p,s,bn", INTERPRET_CASES, ids=[_case_name(*c) for c in INTERPRET_CASES])
def test_kernel_equals_reference_under_interpreter(interpreted, dt, g, p, s, bn):
    rec = interpreted.get(_case_name(dt, g, p, s, bn))
    assert rec is not None and "error" not in rec, rec
    assert rec["dtype"] == "torch." + dt and rec["err"] < TOLERANCE[dt], rec


# ---- GPU ----------------------------------------------------------------------------------------------------------
gpu = pytest.mark.skipif(not (torch.cuda.is_available() and pa.HAS_TRITON), reason="needs CUDA and Triton")


@gpu
@pytest.mark.parametrize("page_size", [16, 64])
def test_gpu_kernel_equals_reference_bf16(page_size):
    dec = pa.PagedDecode(16, 8, 128, page_size, torch.bfloat16, "cuda")
    assert dec.backend == "triton-paged", dec.probe_error
    case = pa.shared_prompt_case(32, 16, 8, 128, page_size, torch.bfloat16, "cuda")
    want = pa.reference(*case, dec.scale).float()
    for splits in (None, 1, 7):
        got = pa.paged_decode(*case, dec.scale, splits=splits, sms=dec.sms)
        assert float((got.float() - want).abs().max()) < TOLERANCE["bfloat16"], splits
    static = dec(*case)  # compiles before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = dec(*case)
    case[0].copy_(torch.randn_like(case[0]))
    graph.replay()
    torch.cuda.synchronize()
    want = pa.reference(*case, dec.scale).float()
    assert float((static.float() - want).abs().max()) < TOLERANCE["bfloat16"]


if __name__ == "__main__" and sys.argv[1:] == ["--interpret"]:
    interpret_main()
