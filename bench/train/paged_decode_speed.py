"""Speed of one decode step's attention over a paged KV cache (kgym_train/paged_attention.py, the Triton kernel)
against FlashAttention 2 over the rollout engine's contiguous cache (attention.Decode: aten._flash_attention_forward
with per-row key lengths, seqused_k), at the 1.7 B Qwen3 attention shape.

  python3 bench/train/paged_decode_speed.py --out DIR [--batches 4,16,64,128,256] [--page-sizes 64,16,128]
                                            [--sweep 1,2,4,8,16,32] [--rehearse]

Shape: H 16 query heads, Hkv 8 key/value heads, D 128, bf16. Rows: contexts uniform in 2400 +- 256 tokens, in
groups of 16 sharing the full pages of one 1536-token prompt (paged_attention.shared_prompt_case); FlashAttention
reads the same rows from a (B, max_len, Hkv, D) cache holding each row's keys contiguously (no sharing there).
Time per call: 100 calls captured in one CUDA graph, replayed; CUDA events around each replay; the median of 5
replays / 100. Achieved GB/s = the K/V bytes the rows need (sum of used keys x Hkv x D x 2 tensors x 2 bytes,
counted per row, shared pages once per row) / time. Per (page size, batch): the kernel at the splits
paged_attention.choose_splits picks, at each --sweep value (to check the heuristic), and FlashAttention; every
result's max error against paged_attention.reference is recorded. Writes DIR/paged_decode_speed.json with command,
commit, machine, date; prints a table last.

--rehearse: CPU, tiny shapes, the kernel under Triton's interpreter (if Triton is importable), wall-clock timing of
plain calls, no FlashAttention: checks the script, its numbers mean nothing.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
if "--rehearse" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # read when Triton and paged_attention are imported

import torch  # noqa: E402

from kgym_train import attention  # noqa: E402
from kgym_train import paged_attention as pa  # noqa: E402

SHAPE = dict(heads=16, kv_heads=8, head_dim=128, prompt=1536, context=2400, spread=256, group=16)
TINY = dict(heads=4, kv_heads=2, head_dim=64, prompt=48, context=80, spread=16, group=2)
DTYPE = torch.bfloat16


def log(*a):
    print(*a, flush=True)


def time_call(fn, dev, calls):
    """Seconds per call: on CUDA `calls` calls captured in one graph, the median of 5 replays; on CPU the median
    of 3 plain calls."""
    if dev != "cuda":
        fn()
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        return statistics.median(runs)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / 1e3 / calls)
    del graph
    return statistics.median(runs)


def contiguous_cache(k_pages, v_pages, table, used, pages):
    """(B, pages x P, Hkv, D) key and value caches holding each row's keys in order (what Decode reads)."""
    b = used.shape[0]
    p, kv_heads, d = k_pages.shape[1:]
    cols = torch.arange(pages, device=used.device)
    idx = table[:b, :pages].long().masked_fill(cols[None, :] * p >= used[:, None].long(), 0)
    return (k_pages[idx].reshape(b, pages * p, kv_heads, d).contiguous(),
            v_pages[idx].reshape(b, pages * p, kv_heads, d).contiguous())


def measure(batch, page_size, shape, sweep, dev, calls, flash):
    case = pa.shared_prompt_case(batch, shape["heads"], shape["kv_heads"], shape["head_dim"], page_size, DTYPE, dev,
                                 prompt=shape["prompt"], context=shape["context"], spread=shape["spread"],
                                 group=shape["group"], seed=batch)
    q, k_pages, v_pages, table, used, pages = case
    scale = 1.0 / math.sqrt(shape["head_dim"])
    sms = torch.cuda.get_device_properties(0).multi_processor_count if dev == "cuda" else pa.DEFAULT_SMS
    want = pa.reference(*case, scale).float()
    kv_bytes = int(used.sum()) * shape["kv_heads"] * shape["head_dim"] * 2 * q.element_size()
    row = dict(batch=batch, page_size=page_size, pages=pages, mean_context=float(used.float().mean()),
               kv_bytes=kv_bytes, chosen_splits=pa.choose_splits(batch, shape["kv_heads"], pages, page_size, sms))

    def kernel(splits):
        s = time_call(lambda: pa.paged_decode(*case, scale, splits=splits, sms=sms), dev, calls)
        err = float((pa.paged_decode(*case, scale, splits=splits, sms=sms).float() - want).abs().max())
        return dict(splits=splits, us=s * 1e6, GBps=kv_bytes / s / 1e9, max_err=err)

    if pa.HAS_TRITON:
        row["triton"] = kernel(row["chosen_splits"])
        row["sweep"] = [kernel(s) for s in sweep if s <= pa.MAX_SPLITS]
        best = min(row["sweep"] + [row["triton"]], key=lambda r: r["us"])
        row["best"] = dict(splits=best["splits"], us=best["us"])
    if flash:
        k_cache, v_cache = contiguous_cache(k_pages, v_pages, table, used, pages)
        dec = attention.Decode(k_cache, shape["heads"], scale)
        length = k_cache.shape[1]
        s = time_call(lambda: dec(q, k_cache, v_cache, used, length), dev, calls)
        err = float((dec(q, k_cache, v_cache, used, length).float() - want).abs().max())
        row["flash"] = dict(backend=dec.backend, us=s * 1e6, GBps=kv_bytes / s / 1e9, max_err=err)
        del k_cache, v_cache, dec
    return row


def facts(dev):
    res = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.node(),
           "torch": torch.__version__, "triton": getattr(pa.triton, "__version__", None),
           "gpu": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu (rehearsal)"}
    try:
        res["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                       text=True).stdout.strip()
    except OSError:
        pass
    return res


def table(rows):
    lines = [f"{'P':>4} {'B':>4} {'ctx':>6} {'splits':>6} {'triton us':>10} {'GB/s':>7} {'best(s) us':>12} "
             f"{'fa2 us':>9} {'GB/s':>7} {'fa2/triton':>10}"]
    for r in rows:
        t, f, b = r.get("triton"), r.get("flash"), r.get("best")
        lines.append(
            f"{r['page_size']:>4} {r['batch']:>4} {r['mean_context']:>6.0f} {r['chosen_splits']:>6} "
            + (f"{t['us']:>10.1f} {t['GBps']:>7.0f} {b['us']:>8.1f}({b['splits']:>2})" if t else f"{'-':>10} {'-':>7} {'-':>12}")
            + (f" {f['us']:>9.1f} {f['GBps']:>7.0f}" if f else f" {'-':>9} {'-':>7}")
            + (f" {f['us'] / t['us']:>10.2f}" if t and f else f" {'-':>10}"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batches", default="4,16,64,128,256")
    ap.add_argument("--page-sizes", default="64,16,128")
    ap.add_argument("--sweep", default="1,2,4,8,16,32", help="splits to time besides the heuristic's")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rehearse", action="store_true", help="CPU, tiny shapes, Triton's interpreter")
    args = ap.parse_args()
    dev = "cpu" if args.rehearse else "cuda"
    shape = TINY if args.rehearse else SHAPE
    batches = [2, 4] if args.rehearse else [int(x) for x in args.batches.split(",")]
    page_sizes = [16] if args.rehearse else [int(x) for x in args.page_sizes.split(",")]
    sweep = [1, 2] if args.rehearse else [int(x) for x in args.sweep.split(",")]
    flash = dev == "cuda" and attention._FLASH_DECODE is not None
    os.makedirs(args.out, exist_ok=True)
    res = facts(dev)
    res.update(shape=shape, dtype=str(DTYPE), calls_per_graph=args.calls, flash_available=flash, rows=[])
    log(f"{res['gpu']}; torch {res['torch']}, triton {res['triton']}; FlashAttention seqused_k: {flash}")
    for page_size in page_sizes:
        for batch in batches:
            row = measure(batch, page_size, shape, sweep, dev, args.calls, flash)
            res["rows"].append(row)
            log(json.dumps(row))
            with open(os.path.join(args.out, "paged_decode_speed.json"), "w") as f:
                json.dump(res, f, indent=2)
            if dev == "cuda":
                torch.cuda.empty_cache()
    log("\n" + table(res["rows"]))


if __name__ == "__main__":
    main()
