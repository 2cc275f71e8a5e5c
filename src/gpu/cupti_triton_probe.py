"""GPU probe of libkgym_cupti.so inside a PyTorch + Triton process (needs a GPU; not run in CI).

    KGYM_CUPTI_OUT=/tmp/probe.kgym python3 src/gpu/cupti_triton_probe.py LIB NAMES_JSON

Loads LIB with ctypes (or finds it already injected through CUDA_INJECTION64_PATH), runs tagged calls
(a Triton kernel plus a cuBLAS matmul; work on a side stream; an empty call), flushes, and writes to
NAMES_JSON the names the Triton side reports for its kernel, so the supervisor-side matcher can be checked
against what CUPTI recorded (kgym_cupti_dump STREAM --candidate NAME).
"""
import ctypes
import json
import sys

TIMING, DETECT_GRAD = 5, 4


def tag(phase, call):
    return (phase << 32) | call


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.kgym_cupti_flush.restype = ctypes.c_int64
    lib.kgym_cupti_begin.argtypes = [ctypes.c_uint64]
    rc = lib.kgym_cupti_init()
    if rc != 0:
        raise SystemExit(f"kgym_cupti_init failed: {rc}")

    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def probe_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    a = torch.randn(2048, 2048, device="cuda")
    grid = (triton.cdiv(n, 1024),)
    compiled = probe_add_kernel[grid](x, y, out, n, BLOCK=1024)  # JIT compile, untagged
    torch.cuda.synchronize()

    for i in range(3):
        lib.kgym_cupti_begin(tag(TIMING, i))
        probe_add_kernel[grid](x, y, out, n, BLOCK=1024)
        torch.mm(a, a)
        lib.kgym_cupti_end()
    torch.cuda.synchronize()

    side = torch.cuda.Stream()
    lib.kgym_cupti_begin(tag(TIMING, 3))
    with torch.cuda.stream(side):
        torch.mm(a, a)
    probe_add_kernel[grid](x, y, out, n, BLOCK=1024)
    lib.kgym_cupti_end()
    torch.cuda.synchronize()

    lib.kgym_cupti_begin(tag(TIMING, 4))  # empty call
    lib.kgym_cupti_end()

    with torch.enable_grad():
        w = torch.randn(512, 512, device="cuda", requires_grad=True)
        lib.kgym_cupti_begin(tag(DETECT_GRAD, 0))
        loss = (w @ w).sum()
        lib.kgym_cupti_end()
        loss.backward()  # on autograd's device thread: expected untagged
    torch.cuda.synchronize()

    seq = lib.kgym_cupti_flush()
    names = {
        "function_name": probe_add_kernel.__name__,
        "compiled_name": getattr(compiled, "name", None) or getattr(getattr(compiled, "metadata", None), "name", None),
        "triton_version": triton.__version__,
        "torch_version": torch.__version__,
        "flush_sequence": seq,
    }
    with open(sys.argv[2], "w") as f:
        json.dump(names, f)
    print(json.dumps(names))


if __name__ == "__main__":
    main()
