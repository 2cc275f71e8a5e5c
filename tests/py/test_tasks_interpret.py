"""Runs every Triton solution of the task suite under Triton's CPU interpreter (TRITON_INTERPRET=1).

Each tasks/solutions/levelN/<name>_triton.py (and _lazy.py, where one exists) must match its reference at the
small size and each <name>_wrong.py must not. Triton is looked up on the normal import path and, if set, in
$KGYM_TRITON_PATH (a pip --target directory); without it the module is skipped. The check runs in
a subprocess so the interpreter setting never leaks into other tests.
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_interp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, "tasks", "check_solutions.py")
PYTHON = os.environ.get("KGYM_PYTHON", sys.executable)


def _env():
    return triton_interp.env(KGYM_TASK_SIZE="small")


if not triton_interp.available():
    pytest.skip("triton is not importable (set KGYM_TRITON_PATH to a pip --target dir holding triton)",
                allow_module_level=True)


def _cases():
    sys.path.insert(0, os.path.dirname(CHECKER))
    try:
        import check_solutions
    finally:
        sys.path.pop(0)
    return [(t, k) for t in check_solutions.task_paths() for k in ("triton", "lazy", "wrong")
            if os.path.exists(check_solutions.solution_path(t, k))]


CASES = _cases()


@pytest.fixture(scope="module")
def verdicts():
    proc = subprocess.run([PYTHON, CHECKER, "--size", "small", "--device", "cpu", "--kinds", "triton,lazy,wrong",
                           "--trials", "2"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=600)
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[(record["task"], record["kind"])] = record
    assert results, proc.stderr[-2000:]
    return results


@pytest.mark.parametrize("task_id,kind", CASES)
def test_solution_verdict_under_interpreter(verdicts, task_id, kind):
    record = verdicts.get((task_id, kind))
    assert record is not None, f"{task_id} {kind}: no verdict"
    if kind in ("triton", "lazy"):
        assert record["verdict"] == "correct", record
    else:
        # Wrong values, not a crash: a wrong solution must run and compute something else.
        assert record["verdict"] == "incorrect", record
