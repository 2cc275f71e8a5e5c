"""bench/gpu/gym_limit.py's CPU rehearsal, as CI can run it: a KernelBench-shaped folder built from tasks/ (levels 1
and 2), one kgym serve per slot setting, a warm and a measured pass; the JSON carries what issue 40 asks of it and every
record's account."""
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KGYM_BIN = os.environ.get("KGYM_BIN", os.path.join(ROOT, "build", "src", "cli", "kgym"))
PY = os.environ.get("KGYM_PYTHON", "/usr/bin/python3")

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


def test_gym_limit_rehearsal_writes_its_figures(tmp_path):
    for level, names in ((1, ["relu", "softmax"]), (2, ["linear_bias_gelu"])):
        d = tmp_path / "kb" / "KernelBench" / ("level%d" % level)
        d.mkdir(parents=True)
        for i, n in enumerate(names, 1):
            shutil.copy(os.path.join(ROOT, "tasks", "level%d" % level, n + ".py"), d / ("%d_%s.py" % (i, n)))
    out = tmp_path / "out"
    p = subprocess.run([PY, os.path.join(ROOT, "bench", "gpu", "gym_limit.py"), "--bin", KGYM_BIN, "--device", "cpu",
                        "--kernelbench", str(tmp_path / "kb"), "--l1", "1,2", "--l2", "1", "--copies", "1",
                        "--slots", "1,2", "--clients", "4", "--warm-budget", "240", "--budget", "240",
                        "--kb-budget", "0", "--python", PY, "--out", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads((out / "gym_limit.json").read_text())
    assert d["problems"] == ["L1/1_relu", "L1/2_softmax", "L2/1_linear_bias_gelu"] and d["copies"] == 1
    assert [c["slots"] for c in d["slots_curve"]] == [1, 2]
    assert d["all_correct"] is True and d["evals_per_gpu_hour"] > 0
    for run in d["runs"]:
        assert run["warm"]["completed"] == 3 and run["measured"]["completed"] == 3
        for r in run["records"]:
            a = r["account"]
            assert sum(a["wall"].values()) == pytest.approx(a["wall_s"])
        # The measured pass made no reference: the warm pass did, once per problem.
        assert run["measured"]["references_made_gpu_s"] == 0
        assert sum(r["account"]["reference_made_here"] for r in run["records"]) <= 3
    # Device work is unknown on the CPU: the GPU figures say so rather than guess.
    assert d["busy_fraction"] is None and d["limit_evals_per_gpu_hour"] is None
