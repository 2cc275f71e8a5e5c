"""The caller's working directory is neither importable by a worker nor written to by an unsealed one."""
import json
import os
import subprocess

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")
REF = os.path.join(HERE, "ref_relu_small.py")

PROBE = """
import torch
import torch.nn as nn
try:
    import kgym_cwd_probe_module
    LEAK = True
except ImportError:
    LEAK = False

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) + (1.0 if LEAK else 0.0)
"""


def _eval(kgym, cwd, kernel, *extra):
    p = subprocess.run([kgym, "eval", "--ref", REF, "--kernel", kernel, "--device", "cpu", "--num-perf-trials", "3",
                        "--warmup", "1"] + list(extra), capture_output=True, text=True, timeout=120, cwd=cwd)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


def test_cwd_not_importable_and_not_written(kgym, tmp_path):
    (tmp_path / "kgym_cwd_probe_module.py").write_text("X = 1\n")
    cand = tmp_path / "cand.py"
    cand.write_text(PROBE)
    for extra in ((), ("--unsafe-no-sandbox",)):
        r = _eval(kgym, str(tmp_path), str(cand), *extra)
        assert r["outcome"] == "correct", (extra, r["outcome_detail"])
        assert sorted(os.listdir(tmp_path)) == ["cand.py", "kgym_cwd_probe_module.py"], extra
