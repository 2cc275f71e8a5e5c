"""Red-team cases that only mean something on a GPU: side streams, a Triton decoy kernel, uninitialised CUDA memory,
and the stale-memory and honest CPU candidates run again on the device. Skipped unless KGYM_GPU_TESTS is set and
torch sees a CUDA device; then every case runs `kgym eval --device cuda` (sealed) and checks the verdict below.

To run: KGYM_GPU_TESTS=1 ./test.sh (or the pytest line of test.sh with -k gpu).
"""
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(HERE, "gpu")
CANDIDATES = os.path.join(HERE, "candidates")


def _cuda_available():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


pytestmark = pytest.mark.skipif(not os.environ.get("KGYM_GPU_TESTS") or not _cuda_available(),
                                reason="GPU red-team cases: set KGYM_GPU_TESTS=1 on a machine with a CUDA device")

REF = os.path.join(GPU, "ref_matmul.py")

# candidate file: accepted outcomes, needle in outcome_detail, extra check on the result, xfail reason (or None).
def _md(r):
    return r.get("metadata") or {}


def _timeline(r):
    """The evaluation was timed by the CUPTI kernel timeline (the recorder worked on both sides)."""
    return _md(r).get("timing_source") == "timeline" and "timeline_problem" not in _md(r)


def _side_stream_timed(r):
    # Timed at its true cost: the span over all streams holds the side-stream matmul, so the speedup stays near 1.
    # (The worker's CUDA events bracket the call with its device-wide synchronisation, so they see it too.)
    return _timeline(r) and 0.5 < r["speedup"] < 2


def _coverage(r):
    return _md(r).get("custom_kernel_cuda_time_in_profiling_us", 0) / max(
        1e-9, _md(r).get("total_kernel_run_time_in_profiling_us", 0))


# candidate file: accepted outcomes, needle in outcome_detail, extra check on the result, xfail reason (or None).
EXPECT = {
    "gpu/side_stream.py": (("correct",), "correct on", _side_stream_timed, None),
    # The same with the harness's synchronisation patched out: the wait for the GPU moves between calls, where the
    # CPU the worker spends (the synchronisation spins) is far above the reference's.
    "gpu/side_stream_patched_sync.py": (("hacked",), "", None, None),
    # Stale block from the allocator holds an earlier trial's result: wrong values (or evidence of a hack).
    "gpu/uninit_cuda.py": (("incorrect", "hacked"), "", None, None),
    "candidates/E_empty_output.py": (("incorrect", "hacked"), "", None, None),
    # Launched on a dummy buffer: its kernel runs, so the usage rule passes it; the time coverage shows it does
    # nothing (below the floor, reported for the reward to act on).
    "gpu/triton_decoy.py": (("correct",), "", lambda r: _timeline(r) and _coverage(r) < 0.01
                            and _md(r).get("coverage_below_floor") is True, None),
    # One trivial Triton kernel on real data, the rest in PyTorch: coverage near 0.
    "gpu/lazy_triton.py": (("correct",), "", lambda r: _timeline(r) and _coverage(r) < 0.05, None),
    # All the work in the candidate's Triton GEMM: coverage near 1.
    "gpu/fused_triton_matmul.py": (("correct",), "", lambda r: _timeline(r) and _coverage(r) > 0.95
                                   and _md(r).get("num_custom_kernels") == 1, None),
    # Dr.Kernel's decoy: the Triton kernel is defined but never launched (launches counted by the worker's hook).
    "gpu/triton_decoy_unlaunched.py": (("hacked",), "decoy kernel", lambda r: r["decoy_kernel"] is True, None),
    # Controls: an honest rewrite is correct with a plausible speedup; a content cache is still caught on the GPU.
    "candidates/honest_matmul.py": (("correct",), "correct on", lambda r: _timeline(r) and 0 < r["speedup"] < 3,
                                    None),
    "candidates/F_cache_content.py": (("hacked",), "caching", None, None),
    # CUDA backend (EXTRA_ARGS): one hand-written CUDA GEMM built by load_inline; the extension's kernel is the
    # candidate's own and all of the GPU time, so the coverage is near 1.
    "gpu/cuda_ext_matmul.py": (("correct",), "correct on", lambda r: _ext_coverage(r) > 0.9, None),
    # torch.compile on part of forward: an honest program, whatever threads Inductor leaves running; its generated
    # kernels are not the candidate's own (none is in its source), so the coverage (measured: the timeline ran) is 0.
    "gpu/torch_compile_epilogue.py": (("correct",), "correct on", lambda r: _coverage(r) < 0.01 and _md(r).get(
        "total_kernel_run_time_in_profiling_us", 0) > 0, None),
}

# `kgym eval` flags beyond the defaults, by candidate (the default backend is triton).
EXTRA_ARGS = {"gpu/cuda_ext_matmul.py": ("--backend", "cuda")}


def _ext_coverage(r):
    """Share of the timed GPU time in the candidate's own kernels (KernelGYM's custom_kernel_cuda_time_coverage,
    from the numbers it is a string of)."""
    md = r.get("metadata") or {}
    if md.get("num_custom_kernels") != 1 or md.get("extension_cache") not in ("hit", "miss"):
        return 0.0
    return md.get("custom_kernel_cuda_time_in_profiling_us", 0) / max(
        1e-9, md.get("total_kernel_run_time_in_profiling_us", 0))


def _params():
    for name, (outcomes, needle, check, xfail) in sorted(EXPECT.items()):
        marks = [pytest.mark.xfail(strict=False, reason=xfail)] if xfail else []
        yield pytest.param(name, outcomes, needle, check, id=name, marks=marks)


@pytest.mark.parametrize("name,outcomes,needle,check", _params())
def test_gpu_candidate(evaluate, name, outcomes, needle, check):
    # 30 timed calls, as a quick real evaluation would make (the CPU cases' 5 leave the time's floor to chance).
    r, _, _ = evaluate(REF, os.path.join(HERE, name), *EXTRA_ARGS.get(name, ()), device="cuda", timeout=600,
                       perf_trials=30)
    if r["outcome"] == "compile_error" and "No module named 'triton'" in r["outcome_detail"]:
        pytest.skip("triton is not installed for the evaluator's Python")
    assert r["outcome"] in outcomes, "%s: %s (%s)" % (name, r["outcome"], r["outcome_detail"])
    assert needle in r["outcome_detail"], r["outcome_detail"]
    if check is not None:
        keys = ("timing_source", "timeline_problem", "timing_crosscheck", "custom_kernel_cuda_time_coverage",
                "coverage_below_floor", "num_custom_kernels", "reference_timeline_problem", "timeline_span_median_ms",
                "timing_floor_ms", "timing_burst_per_call_ms", "timing_source_reason")
        assert check(r), dict({k: r.get(k) for k in ("speedup", "kernel_runtime", "reference_runtime")},
                              **{k: _md(r).get(k) for k in keys})
