"""Can a trusted process read a sandboxed worker's device memory through CUDA IPC, and what does it cost?

The level-1 goal needs the correctness comparison on the device: a pristine comparator process (no candidate code)
opening the candidate's output storage by CUDA IPC. This probe answers, on one GPU, before any of that is built:
  1. does cudaIpcOpenMemHandle work when the exporter runs in its own PID, network and mount namespaces (as every
     kgym worker does), and when both ends do;
  2. what the importer sees after the exporter frees the memory (torch.cuda.empty_cache) or exits while the
     mapping is open: an error, stale values, or a fault that poisons the importer's context (a shared comparator
     must survive a hostile exporter);
  3. the cost: opening a handle, and an allclose-style comparison of a 2 GB float32 output on the device.

  python3 bench/gpu/cuda_ipc_probe.py [--mb 2048] > ipc.json       (as root, for unshare)

The exporter is this file with --export, started under `unshare -n -p -f --mount-proc`; it allocates through torch's
caching allocator (as a candidate's outputs are), finds the allocation's base with cuMemGetAddressRange, exports
cudaIpcGetMemHandle(base) and the tensor's offset on stdout, then obeys "free" / "exit" lines on stdin.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

import torch


class Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


def _lib(name):
    """The CUDA library torch itself loaded (one runtime, one context)."""
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if name in os.path.basename(p):
                return ctypes.CDLL(p)
    return ctypes.CDLL(name + ".so")


def _ok(rc, what):
    if rc != 0:
        raise RuntimeError("%s failed: cudaError %d" % (what, rc))


class DevicePointer:
    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}


def export(mb):
    torch.cuda.init()
    n = mb * (1 << 20) // 4
    t = torch.arange(n, dtype=torch.float32, device="cuda").remainder_(1000.0)
    torch.cuda.synchronize()
    cuda, rt = _lib("libcuda.so"), _lib("libcudart")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _ok(cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr())),
        "cuMemGetAddressRange")
    h = Handle()
    _ok(rt.cudaIpcGetMemHandle(ctypes.byref(h), ctypes.c_void_p(base.value)), "cudaIpcGetMemHandle")
    print(json.dumps({"handle": bytes(h.reserved).hex(), "offset": t.data_ptr() - base.value, "numel": n,
                      "sum": float(t.double().sum()), "pid_seen": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "free":
            del t
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            print(json.dumps({"freed": True}), flush=True)
        elif cmd == "exit":
            os._exit(0)


def start_exporter(mb, sandboxed):
    cmd = [sys.executable, os.path.abspath(__file__), "--export", "--mb", str(mb)]
    if sandboxed:
        cmd = ["unshare", "-n", "-p", "-f", "--mount-proc"] + cmd
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return p, json.loads(p.stdout.readline())


def read_sum(ptr, n):
    x = torch.as_tensor(DevicePointer(ptr, n), device="cuda")
    s = float(x.double().sum())
    torch.cuda.synchronize()
    return s


def scenario(name, mb, sandboxed, after):
    """Opens the exporter's memory, checks it, then does `after` ("free" / "exit" / None) and reads again."""
    out = {"scenario": name, "exporter_sandboxed": sandboxed}
    rt = _lib("libcudart")
    p, e = start_exporter(mb, sandboxed)
    out["exporter_pid_as_it_sees_itself"] = e["pid_seen"]
    try:
        h = Handle.from_buffer_copy(bytes.fromhex(e["handle"]))
        ptr = ctypes.c_void_p()
        t0 = time.perf_counter()
        rc = rt.cudaIpcOpenMemHandle(ctypes.byref(ptr), h, ctypes.c_uint(1))
        out["open_s"] = round(time.perf_counter() - t0, 5)
        out["open_rc"] = rc
        if rc != 0:
            return out
        data = ptr.value + e["offset"]
        out["values_match"] = read_sum(data, e["numel"]) == e["sum"]
        if name == "sandboxed-exporter":
            out.update(compare_cost(data, e["numel"]))
        if after:
            p.stdin.write(after + "\n")
            p.stdin.flush()
            if after == "free":
                out["exporter_reply"] = json.loads(p.stdout.readline())
            else:
                p.wait(timeout=30)
            try:
                out["after_%s_values_match" % after] = read_sum(data, e["numel"]) == e["sum"]
            except Exception as ex:  # noqa: BLE001 (the answer is the exception)
                out["after_%s_error" % after] = str(ex)[:300]
        out["close_rc"] = rt.cudaIpcCloseMemHandle(ptr)
        # Is this process's context still usable after all that?
        try:
            out["context_still_works"] = float(torch.ones(1024, device="cuda").sum()) == 1024.0
        except Exception as ex:  # noqa: BLE001
            out["context_error"] = str(ex)[:300]
        return out
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


def compare_cost(ptr, n):
    """An allclose-style check of the imported output against a reference copy, on the device."""
    x = torch.as_tensor(DevicePointer(ptr, n), device="cuda")
    ref = x.clone() + 1e-6
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        d = (x - ref).abs_()
        bad = int((d > 1e-2 + 1e-2 * ref.abs()).sum())
        worst = float(d.max())
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return {"compare_s": round(best, 5), "compare_bytes": 2 * 4 * n, "mismatched": bad, "max_abs": worst}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", action="store_true")
    ap.add_argument("--mb", type=int, default=2048)
    a = ap.parse_args()
    if a.export:
        export(a.mb)
        return
    torch.cuda.init()
    torch.ones(1, device="cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "mb": a.mb, "scenarios": []}
    for name, sandboxed, after in [("plain", False, None), ("sandboxed-exporter", True, None),
                                   ("sandboxed-exporter-frees", True, "free"),
                                   ("sandboxed-exporter-exits", True, "exit")]:
        try:
            res["scenarios"].append(scenario(name, a.mb, sandboxed, after))
        except Exception as ex:  # noqa: BLE001
            res["scenarios"].append({"scenario": name, "error": str(ex)[:300]})
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
