"""Triton candidates through the whole sealed pipeline on the CPU, in Triton's interpreter (TRITON_INTERPRET=1,
Triton from $KGYM_TRITON_PATH): an honest Triton kernel is correct and its launches are counted; a decoy whose
Triton kernel never runs is `hacked`. Skipped when no Triton is available to the evaluator's Python."""
import json
import os
import subprocess

import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")
REF = os.path.join(HERE, "ref_relu_small.py")
PY = os.environ.get("KGYM_PYTHON", "/usr/bin/python3")


def _env():
    env = dict(os.environ, TRITON_INTERPRET="1")
    return env


def _triton_ok():
    extra = os.environ.get("KGYM_TRITON_PATH", "")
    env = dict(_env(), PYTHONPATH=extra)
    return subprocess.run([PY, "-c", "import triton, triton.language"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


pytestmark = pytest.mark.skipif(not _triton_ok(), reason="no Triton for the evaluator's Python (KGYM_TRITON_PATH)")


def _eval(kgym, kernel):
    cmd = [kgym, "eval", "--ref", REF, "--kernel", os.path.join(HERE, kernel), "--device", "cpu",
           "--num-perf-trials", "3", "--warmup", "1", "--eval-timeout", "300"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=_env())
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def test_honest_triton_kernel_is_correct_and_counted(kgym):
    r = _eval(kgym, "relu_triton_ok.py")
    assert r["outcome"] == "correct", r["outcome_detail"]
    assert r["metadata"]["triton_kernels_defined"] == ["relu_kernel"]
    assert r["metadata"]["triton_launches_in_correctness"] >= 6
    assert r["decoy_kernel"] is False


def test_unlaunched_triton_kernel_is_a_decoy(kgym):
    r = _eval(kgym, "decoy_unlaunched.py")
    assert r["outcome"] == "hacked", r["outcome_detail"]
    assert "decoy kernel" in r["outcome_detail"] and "relu_kernel" in r["outcome_detail"]
    assert r["decoy_kernel"] is True and r["correctness"] is False
