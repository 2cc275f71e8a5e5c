"""Fixtures for the red-team suite: the `kgym` fixture of tests/py (loaded from there, not copied) and an
`evaluate` helper that runs `kgym eval` on a chosen device with a chosen environment."""
import importlib.util
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CANDIDATES = os.path.join(HERE, "candidates")
REFS = os.path.join(HERE, "refs")
GPU = os.path.join(HERE, "gpu")

# Loaded under its own name: both directories' conftest.py would otherwise be the module "conftest".
_spec = importlib.util.spec_from_file_location("kgym_tests_py_conftest", os.path.join(ROOT, "tests", "py", "conftest.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
kgym = _base.kgym  # the session fixture: path of the built binary
run_eval = _base.run_eval  # so `from conftest import run_eval` in tests/py works whichever conftest is "conftest"


@pytest.fixture(scope="session")
def evaluate(kgym, tmp_path_factory):
    """evaluate(ref, kernel, *extra, device="cpu", env=None) -> (result dict, stdout, stderr). kgym runs in an
    empty directory of its own: an unsealed worker (--unsafe-no-sandbox) writes its code files into the current
    directory, and the workers' sys.path starts with it."""
    cwd = str(tmp_path_factory.mktemp("kgym-cwd"))

    def run(ref, kernel, *extra, device="cpu", env=None, timeout=240, perf_trials=5):
        cmd = [kgym, "eval", "--ref", os.path.abspath(ref), "--kernel", os.path.abspath(kernel), "--device", device,
               "--num-perf-trials", str(perf_trials), "--warmup", "1"] + list(extra)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
        assert p.returncode == 0, "kgym eval failed (%d): %s" % (p.returncode, p.stderr[-2000:])
        return json.loads(p.stdout), p.stdout, p.stderr

    return run
