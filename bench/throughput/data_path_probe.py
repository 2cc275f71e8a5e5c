"""Where the worker's side of the correctness data path spends its time, per output size, on one GPU (or, with
--device cpu, the packing steps alone).

For each size it times the packing three ways (a fresh memfd; a fresh memfd whose pages four threads allocate first,
as the reference's worker does; a buffer lent by the supervisor, made once and reused, as a candidate's outputs since
src/eval/lent_buffers.h), then, on a GPU, it times the harness's own functions (python/kgym_harness/tensors.py): `pack` of a device tensor into
a sealed memfd (what a candidate does with every trial's outputs) and `unpack` of such a memfd onto the device (what
it does with every trial's inputs), then the steps `pack` is made of, one at a time, and two other ways to fill a
memfd from the device: a page-locked staging buffer made once and reused (device -> staging at full speed, then a
host copy into the memfd) and a plain pageable copy into the memfd's mapping. Best of `--repeat` each.

  python3 bench/throughput/data_path_probe.py --sizes-mb 32,268,1024,2100 --out probe.json

Prints one JSON object (also written to --out): {"device", "sizes": [{"mb", "<step>_s": seconds, ...}]}.
"""
import argparse
import fcntl
import json
import mmap
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

from kgym_harness import tensors  # noqa: E402


def _sync():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        _sync()
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - t0)
    return round(min(times), 5)


def memfd(n):
    fd = os.memfd_create("probe", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, n)
    return fd


def lent_memfd(n):
    """What the supervisor lends (Region::Lent): pages allocated, sealed against resizing, not against writes."""
    fd = memfd(n)
    os.posix_fallocate(fd, 0, n)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def pack_steps(src, repeat):
    """The worker's packing of `src` three ways: a fresh memfd (a candidate's outputs without a lent buffer), a fresh
    memfd whose pages four threads allocate first (the reference's worker), and into a lent buffer made once (a
    candidate's outputs since lent buffers)."""
    r = {}

    def pack():
        _, _, _, fd = tensors.pack([src], region=0)
        os.close(fd)
    r["pack_s"] = best(pack, repeat)
    threads, tensors.POPULATE_THREADS = tensors.POPULATE_THREADS, 4
    try:
        r["pack_allocated_on_4_threads_s"] = best(pack, repeat)
    finally:
        tensors.POPULATE_THREADS = threads
    fd = lent_memfd(src.numel() * src.element_size())
    lent = tensors.lent_buffer({"out_region": 0}, [fd])
    tensors.pack_into([src], lent)  # the first use maps (and registers) the buffer
    r["pack_lent_s"] = best(lambda: tensors.pack_into([src], lent), repeat)
    os.close(fd)
    return {k: round(v, 5) for k, v in r.items()}


def probe_size(mb, repeat, staging, device):
    n = int(mb * (1 << 20)) // 4 * 4
    src = torch.randn(n // 4, device=device)
    flat = src.view(torch.uint8)
    r = {"mb": mb}
    r.update(pack_steps(src, repeat))
    if device == "cpu":
        return r, staging

    _, descs, _, fd = tensors.pack([src], region=0)
    items = [{"kind": "tensor", "index": 0}]
    r["unpack_to_cuda_s"] = best(lambda: tensors.unpack(items, descs, b"", "cuda", [fd]), repeat)
    os.close(fd)

    def steps():
        t = {}
        t0 = time.perf_counter()
        fd = memfd(n)
        mm = mmap.mmap(fd, n, mmap.MAP_SHARED | tensors._POPULATE, mmap.PROT_READ | mmap.PROT_WRITE)
        t["create_populate_s"] = time.perf_counter() - t0
        buf = torch.frombuffer(mm, dtype=torch.uint8)
        t0 = time.perf_counter()
        ok = torch.cuda.cudart().cudaHostRegister(buf.data_ptr(), n, 0) == 0
        t["register_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        buf.copy_(flat)
        torch.cuda.synchronize()
        t["d2h_registered_s" if ok else "d2h_pageable_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if ok:
            torch.cuda.cudart().cudaHostUnregister(buf.data_ptr())
        del buf
        mm.close()
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, tensors._SEALS)
        t["unregister_seal_s"] = time.perf_counter() - t0
        os.close(fd)
        return t
    runs = [steps() for _ in range(repeat)]
    for k in runs[0]:
        r[k] = round(min(x[k] for x in runs), 5)

    def pageable():
        fd = memfd(n)
        mm = mmap.mmap(fd, n, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        torch.frombuffer(mm, dtype=torch.uint8).copy_(flat)
        torch.cuda.synchronize()
        mm.close()
        os.close(fd)
    r["memfd_pageable_copy_s"] = best(pageable, repeat)

    if staging is None or staging.numel() < n:
        staging = torch.empty(n, dtype=torch.uint8, pin_memory=True)

    def staged():
        staging[:n].copy_(flat, non_blocking=True)
        torch.cuda.synchronize()
        fd = memfd(n)
        mm = mmap.mmap(fd, n, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        torch.frombuffer(mm, dtype=torch.uint8).copy_(staging[:n])
        mm.close()
        os.close(fd)
    r["memfd_via_pinned_staging_s"] = best(staged, repeat)
    r["d2h_pinned_staging_only_s"] = best(lambda: staging[:n].copy_(flat, non_blocking=True), repeat)
    r["d2d_copy_s"] = best(lambda: src.clone(), repeat)
    return r, staging


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-mb", default="32,268,1024,2100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda", help="cuda, or cpu (the packing steps alone)")
    args = ap.parse_args()
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print("data_path_probe: no CUDA device", file=sys.stderr)
            return 2
        torch.ones(1, device="cuda")
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu (%d cores)" % os.cpu_count()
    out = {"device": name, "torch": torch.__version__, "sizes": []}
    staging = None
    for mb in (float(x) for x in args.sizes_mb.split(",")):
        r, staging = probe_size(mb, args.repeat, staging, args.device)
        out["sizes"].append(r)
        print(json.dumps(r), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
