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
EXPECT = {
    # Timing brackets the whole device (the worker synchronises every stream before "done"), so the side stream's
    # work is counted: the same work as the reference cannot look much faster.
    "gpu/side_stream.py": (("correct",), "correct on", lambda r: 0 < r["speedup"] < 3, None),
    # The same with the harness's synchronisation patched out: the wait for the GPU moves between calls, where the
    # CPU the worker spends (the synchronisation spins) is far above the reference's. Not yet run on a GPU.
    "gpu/side_stream_patched_sync.py": (("hacked",), "", None, None),
    # Stale block from the allocator holds an earlier trial's result: wrong values (or evidence of a hack).
    "gpu/uninit_cuda.py": (("incorrect", "hacked"), "", None, None),
    "candidates/E_empty_output.py": (("incorrect", "hacked"), "", None, None),
    # Launched on a dummy buffer: only a time-coverage check (CUPTI timeline, not wired into the evaluator yet)
    # can call this a decoy; the launch-count rule sees a launch.
    "gpu/triton_decoy.py": (("hacked",), "decoy", None,
                            "the launch is counted, and no time-coverage check is wired into the evaluator yet"),
    # Dr.Kernel's decoy: the Triton kernel is defined but never launched (launches counted by the worker's hook).
    "gpu/triton_decoy_unlaunched.py": (("hacked",), "decoy kernel", lambda r: r["decoy_kernel"] is True, None),
    # Controls: an honest rewrite is correct with a plausible speedup; a content cache is still caught on the GPU.
    "candidates/honest_matmul.py": (("correct",), "correct on", lambda r: 0 < r["speedup"] < 3, None),
    "candidates/F_cache_content.py": (("hacked",), "caching", None, None),
}


def _params():
    for name, (outcomes, needle, check, xfail) in sorted(EXPECT.items()):
        marks = [pytest.mark.xfail(strict=False, reason=xfail)] if xfail else []
        yield pytest.param(name, outcomes, needle, check, id=name, marks=marks)


@pytest.mark.parametrize("name,outcomes,needle,check", _params())
def test_gpu_candidate(evaluate, name, outcomes, needle, check):
    r, _, _ = evaluate(REF, os.path.join(HERE, name), device="cuda", timeout=600)
    if r["outcome"] == "compile_error" and "No module named 'triton'" in r["outcome_detail"]:
        pytest.skip("triton is not installed for the evaluator's Python")
    assert r["outcome"] in outcomes, "%s: %s (%s)" % (name, r["outcome"], r["outcome_detail"])
    assert needle in r["outcome_detail"], r["outcome_detail"]
    if check is not None:
        assert check(r), {k: r.get(k) for k in ("speedup", "kernel_runtime", "reference_runtime")}
