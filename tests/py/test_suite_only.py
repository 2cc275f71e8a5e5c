"""`kgym suite --only`: a token that is a task's whole name selects that task alone, any other token every task
whose name contains it (the wrong solutions of the suite fail fast, so this runs in seconds on the CPU)."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KGYM_BIN = os.environ.get("KGYM_BIN", os.path.join(ROOT, "build", "src", "cli", "kgym"))
pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


def _tasks(tmp_path, only):
    out = tmp_path / "suite.json"
    cmd = [KGYM_BIN, "suite", "--tasks", os.path.join(ROOT, "tasks"), "--size", "small", "--device", "cpu",
           "--kinds", "wrong", "--num-perf-trials", "2", "--num-correct-trials", "1", "--jobs", "2", "--only", only,
           "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, TRITON_INTERPRET="1"))
    assert p.returncode == 0, p.stderr[-3000:]
    return sorted(r["task_id"] for r in json.loads(out.read_text()))


def test_whole_name_selects_one_task_and_a_fragment_selects_all_that_contain_it(tmp_path):
    assert _tasks(tmp_path, "relu") == ["level1/relu_wrong"]
    fragment = _tasks(tmp_path, "elu")
    assert "level1/relu_wrong" in fragment and "level1/leaky_relu_wrong" in fragment and "level1/gelu_wrong" in fragment
    assert _tasks(tmp_path, "relu,gelu") == ["level1/gelu_wrong", "level1/relu_wrong"]


def test_back_to_back_evaluations_take_the_spare_worker(tmp_path):
    """One evaluation at a time under one sandbox policy: the first starts its candidate worker fresh, every later one
    takes the spare started in the background (ready, or waited for when it is still starting), never a second
    fresh start (metadata.candidate_worker)."""
    out = tmp_path / "suite.json"
    cmd = [KGYM_BIN, "suite", "--tasks", os.path.join(ROOT, "tasks"), "--size", "small", "--device", "cpu",
           "--kinds", "torch", "--num-perf-trials", "2", "--num-correct-trials", "1", "--jobs", "1", "--only",
           "relu,gelu,softmax,layernorm", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    results = json.loads(out.read_text())
    assert len(results) >= 4 and all(r["outcome"] == "correct" for r in results), [r["outcome"] for r in results]
    how = [r["metadata"]["candidate_worker"] for r in results]
    assert how[0] == "fresh"
    assert set(how[1:]) <= {"spare", "spare_waited"}, how
