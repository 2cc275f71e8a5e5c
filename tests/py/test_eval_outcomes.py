"""Every outcome of issue "Evaluation core", provoked for real on the CPU through `kgym eval`; after each failure
the next evaluation of an honest candidate is correct (the failure left nothing behind)."""
import json
import os
import subprocess

import pytest

from conftest import run_eval

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")
REF = os.path.join(HERE, "ref_linear_relu.py")


def cand(name):
    return os.path.join(HERE, name + ".py")


def check_next_is_correct(kgym):
    r, _, _ = run_eval(kgym, REF, cand("good"))
    assert r["outcome"] == "correct", r["outcome_detail"]


def test_correct_rewrite(kgym):
    r, _, _ = run_eval(kgym, REF, cand("good"))
    assert r["outcome"] == "correct"
    assert r["status"] == "completed" and r["compiled"] and r["correctness"]
    assert r["kernel_runtime"] > 0 and r["reference_runtime"] > 0
    assert r["speedup"] == pytest.approx(r["reference_runtime"] / r["kernel_runtime"])
    assert r["timing"]["kernel"]["n"] == 5
    # 5 default trials, a signed/wider one and a sparse one; nothing the candidate did grew its thread count.
    assert r["metadata"]["correctness_trials"] == "(7 / 7)"
    variants = [t["variant"] for t in r["correctness_detail"]["trials"]]
    assert variants == ["default"] * 5 + ["signed", "sparse"]
    assert r["metadata"]["correctness_thread_growth_calls"] <= 1
    assert r["metadata"]["timing_thread_growth_calls"] <= 1
    # The supervisor's CPU accounting of the worker (schedstat): present for both processes.
    assert r["metadata"]["timing_cpu_inside_call_ms"] >= 0
    assert r["metadata"]["reference_cpu_between_calls_ms"] >= 0
    # Where the evaluation's wall time went, phase by phase; the phases partition it.
    phases = r["metadata"]["phase_s"]
    assert {"reference", "load", "correctness", "timing"} <= set(phases)
    assert sum(phases.values()) <= r["metadata"]["evaluation_s"]
    # The account of it (src/eval/account.h): the same time in finer parts, the timing phase split by the lock.
    a = r["metadata"]["account"]
    assert {"worker_start", "load", "correctness", "lock_wait", "freeze", "hold", "timing_other"} <= set(a["wall"])
    assert sum(a["wall"].values()) == pytest.approx(a["wall_s"])
    assert a["wall_s"] == pytest.approx(r["metadata"]["evaluation_s"], rel=0.01, abs=0.01)
    assert a["reference_made_here"] is True  # kgym eval: a fresh evaluator makes its reference


@pytest.mark.parametrize("name,outcome,needle", [
    ("wrong_values", "incorrect", "mean abs diff"),
    ("wrong_then_crash", "incorrect", "mean abs diff"),  # trials overlap their comparisons: the first wrong one wins
    ("wrong_shape", "incorrect", "shape mismatch: expected [64, 128], got [64]"),
    ("nan_output", "incorrect", "NaN"),
    ("syntax_error", "compile_error", "line 6"),
    ("missing_modelnew", "compile_error", "no class ModelNew"),
    ("import_error", "compile_error", "kgym_no_such_module_for_tests"),
    ("forward_exception", "runtime_error", "line 11"),
    ("segfault", "crashed", "SIGSEGV"),
    ("exit3", "crashed", "status 3"),
])
def test_failure_outcomes(kgym, name, outcome, needle):
    r, _, _ = run_eval(kgym, REF, cand(name))
    assert r["outcome"] == outcome, r["outcome_detail"]
    assert needle in r["outcome_detail"]
    assert r["speedup"] == 0 and r["correctness"] is False
    check_next_is_correct(kgym)


def test_compat_mode_marks_compile_errors_failed(kgym):
    r, _, _ = run_eval(kgym, REF, cand("syntax_error"), "--compat")
    assert r["status"] == "failed" and r["compiled"] is False
    r, _, _ = run_eval(kgym, REF, cand("syntax_error"))
    assert r["status"] == "completed" and r["compiled"] is False
    assert r["error_code"] == "COMPILATION_ERROR"


def test_crash_is_detected_at_once(kgym):
    r, _, wall = run_eval(kgym, REF, cand("segfault"), "--eval-timeout", "60")
    assert r["outcome"] == "crashed"
    # The death is seen through the worker's channel, not at the 60 s limit.
    assert wall < 30


def test_infinite_loop_times_out(kgym):
    r, _, wall = run_eval(kgym, REF, cand("infinite_loop"), "--eval-timeout", "5")
    assert r["outcome"] == "timeout", r["outcome_detail"]
    assert wall < 5 + 2 + 5  # limit + 2 s, plus the process start of the CLI itself
    check_next_is_correct(kgym)


def test_memory_limit(kgym):
    r, _, _ = run_eval(kgym, REF, cand("big_alloc"), "--memory-limit-gb", "4")
    assert r["outcome"] == "resource_exhausted", r["outcome_detail"]
    check_next_is_correct(kgym)


def test_output_flood_is_bounded(kgym):
    r, _, _ = run_eval(kgym, REF, cand("flood_output"), timeout=300)
    assert r["outcome"] == "correct", r["outcome_detail"]
    md = r["metadata"]
    assert md["stdout_bytes"] >= 100 * 1024 * 1024
    assert len(md["stdout_tail"]) < 100 * 1024
    assert "END-OF-FLOOD" in md["stdout_tail"]  # the tail is kept


def _sleepers():
    out = subprocess.run(["pgrep", "-f", "sleep 1000"], capture_output=True, text=True).stdout.split()
    return set(out)


def test_background_process_is_killed(kgym):
    before = _sleepers()
    r, _, _ = run_eval(kgym, REF, cand("background_process"))
    assert r["outcome"] == "hacked", r["outcome_detail"]
    assert "stray process" in r["outcome_detail"]
    assert _sleepers() - before == set()  # nothing it started survived the evaluation
    check_next_is_correct(kgym)


def test_broken_reference_is_invalid_not_blamed(kgym, tmp_path):
    ref = tmp_path / "bad_ref.py"
    ref.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                   "def get_inputs():\n    raise RuntimeError('broken task')\n"
                   "def get_init_inputs():\n    return []\n")
    r, _, _ = run_eval(kgym, str(ref), cand("good"))
    assert r["outcome"] == "invalid"
    assert "reference" in r["outcome_detail"] and "broken task" in r["outcome_detail"]


def test_usage_error_exit_code(kgym):
    p = subprocess.run([kgym, "eval", "--ref", "/nonexistent.py", "--kernel", cand("good")], capture_output=True,
                       text=True)
    assert p.returncode != 0 and "cannot read" in p.stderr


def test_torch_compile_reference_is_applied_or_refused(kgym):
    """--reference-backend torch_compile times the compiled reference; where torch.compile cannot be applied (Debian's
    torch 1.13 has none) kgym eval refuses as an infrastructure error (exit 1, the reason on stderr) instead of
    timing eager PyTorch under that name."""
    import torch
    cmd = [kgym, "eval", "--ref", REF, "--kernel", cand("good"), "--device", "cpu", "--num-perf-trials", "5",
           "--warmup", "1", "--reference-backend", "torch_compile"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if hasattr(torch, "compile"):
        assert p.returncode == 0, p.stderr[-2000:]
        r = json.loads(p.stdout)
        assert r["outcome"] == "correct", r["outcome_detail"]
        assert "reference_backend_error" not in r["metadata"]
    else:
        assert p.returncode == 1, p.stdout[-2000:]
        assert "reference backend 'torch_compile' could not be applied" in p.stderr, p.stderr[-2000:]
    check_next_is_correct(kgym)
