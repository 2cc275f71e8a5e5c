"""Baseline for bench/eval_overhead: one evaluation in one fresh process, the way KernelBench's batch harness and
KernelGYM's respawned subprocess do it: import torch, exec reference and candidate in this interpreter, 5
correctness trials, 1 warmup + 10 timed calls. Prints "correct" or "incorrect"."""
import argparse
import importlib.util
import time

import torch


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("ref")
    ap.add_argument("kernel")
    a = ap.parse_args()
    dev = a.device
    ref, cand = load(a.ref, "ref"), load(a.kernel, "cand")
    torch.manual_seed(42)
    init = ref.get_init_inputs()
    torch.manual_seed(42)
    m = ref.Model(*init).to(dev)
    torch.manual_seed(42)
    c = cand.ModelNew(*init).to(dev)
    ok = True
    with torch.no_grad():
        for t in range(5):
            torch.manual_seed(t)
            x = [v.to(dev) if isinstance(v, torch.Tensor) else v for v in ref.get_inputs()]
            ok &= torch.allclose(m(*x), c(*x), atol=1e-2, rtol=1e-2)
        for model in (c, m):
            model(*x)
            for _ in range(10):
                t0 = time.perf_counter()
                model(*x)
                if dev == "cuda":
                    torch.cuda.synchronize()
                time.perf_counter() - t0
    print("correct" if ok else "incorrect")


if __name__ == "__main__":
    main()
