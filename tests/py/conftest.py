"""Shared fixtures: the kgym binary and helpers to evaluate a candidate on the CPU through the real pipeline."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def kgym_bin():
    return os.environ.get("KGYM_BIN") or os.path.join(ROOT, "build", "src", "cli", "kgym")


@pytest.fixture(scope="session")
def kgym():
    b = kgym_bin()
    if not os.path.exists(b):
        pytest.fail("kgym binary not built at %s (run ./setup.sh)" % b)
    return b


def run_eval(kgym, ref, kernel, *extra, timeout=120):
    """Runs `kgym eval` and returns (json result, stderr, wall seconds)."""
    import time
    cmd = [kgym, "eval", "--ref", ref, "--kernel", kernel, "--device", "cpu", "--num-perf-trials", "5",
           "--warmup", "1"] + list(extra)
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.time() - t0
    assert p.returncode == 0, "kgym eval failed (%d): %s" % (p.returncode, p.stderr[-2000:])
    return json.loads(p.stdout), p.stderr, wall


@pytest.fixture
def redis():
    """A private redis-server (server_util.RedisServer) for one test; the test skips where none is installed."""
    from server_util import RedisServer
    r = RedisServer()
    if not r.proc:
        pytest.skip("redis-server not installed")
    yield r
    r.stop()
