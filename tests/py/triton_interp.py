"""Running Triton kernels under Triton's CPU interpreter from a test: the environment of the subprocess
(TRITON_INTERPRET=1, and $KGYM_TRITON_PATH, a pip --target folder holding Triton, ahead on PYTHONPATH) and whether
Triton imports there. Interpreter settings never leak into the test process itself."""
import os
import subprocess
import sys

PYTHON = os.environ.get("KGYM_PYTHON", sys.executable)


def env(**extra):
    e = dict(os.environ, TRITON_INTERPRET="1", **extra)
    path = os.environ.get("KGYM_TRITON_PATH")
    if path:
        e["PYTHONPATH"] = path + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def available():
    probe = subprocess.run([PYTHON, "-c", "import torch, triton, triton.language"], env=env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return probe.returncode == 0


def run_cases(test_file, timeout=600):
    """Runs `test_file --interpret` under the interpreter; it prints one JSON object a line, each with a "case" name.
    Returns {case: object}; skips the calling test when Triton is not importable."""
    import json

    import pytest
    if not available():
        pytest.skip("triton is not importable (set KGYM_TRITON_PATH to a pip --target dir holding triton)")
    p = subprocess.run([PYTHON, os.path.abspath(test_file), "--interpret"], env=env(), capture_output=True, text=True,
                       timeout=timeout)
    got = {}
    for line in p.stdout.splitlines():
        rec = json.loads(line)
        got[rec["case"]] = rec
    assert got, p.stderr[-2000:]
    return got
