"""Large tensors travel between workers and the supervisor as sealed memfds: verdicts on such outputs are right,
and a candidate that rewrites the harness so its output region is left unsealed (it could then keep changing
the bytes while the supervisor reads them) is caught."""
import os

from conftest import run_eval

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")
REF = os.path.join(HERE, "ref_big_relu_add.py")  # 2 MiB outputs: they come back in buffers the supervisor lends
MID = os.path.join(HERE, "ref_mid_relu_add.py")  # 256 KiB outputs: in the worker's own sealed memfds

GOOD = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.clamp(x, min=0) + y, x.sum(dim=1)
"""

WRONG = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.clamp(x, min=0) + y
        out[511, 1023] += 1.0
        return out, x.sum(dim=1)
"""

UNSEALED = """
import fcntl
import torch
import torch.nn as nn

_real = fcntl.fcntl

def _no_seals(fd, cmd, arg=0):
    if cmd == fcntl.F_ADD_SEALS:
        return 0
    return _real(fd, cmd, arg)

fcntl.fcntl = _no_seals

class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x) + y, x.sum(dim=1)
"""


def _write(tmp_path, name, code):
    p = tmp_path / (name + ".py")
    p.write_text(code)
    return str(p)


def test_large_outputs_correct_and_wrong(kgym, tmp_path):
    r, _, _ = run_eval(kgym, REF, _write(tmp_path, "good", GOOD))
    assert r["outcome"] == "correct", r["outcome_detail"]
    lent = r["metadata"]["lent_buffers"]
    assert lent["used"] >= 7 and 1 <= lent["made"] <= 3, lent  # every trial's outputs and the kept ones, 3 buffers
    assert lent["bytes"] == 512 * 1024 * 4 + 512 * 4
    r, _, _ = run_eval(kgym, REF, _write(tmp_path, "wrong", WRONG))
    assert r["outcome"] == "incorrect", r["outcome_detail"]
    assert "1 of 524288 elements" in r["outcome_detail"]


def test_unsealed_output_region_is_hacked(kgym, tmp_path):
    r, _, _ = run_eval(kgym, MID, _write(tmp_path, "unsealed", UNSEALED))
    assert r["outcome"] == "hacked", r["outcome_detail"]
    assert "result channel tampering" in r["outcome_detail"]
    assert "sealed" in r["outcome_detail"]
    assert "lent_buffers" not in r["metadata"]
    # A broken channel runs the candidate again on a fresh worker (it might have been this side's fault): the same
    # tampering the second time is the verdict.
    assert "result channel tampering" in r["metadata"]["candidate_rerun"]["outcome_detail"]
    r, _, _ = run_eval(kgym, MID, _write(tmp_path, "good", GOOD))
    assert r["outcome"] == "correct", r["outcome_detail"]


def test_outputs_in_a_lent_buffer_leave_no_seal_to_tamper_with(kgym, tmp_path):
    """The supervisor's own buffer is sealed against resizing by the supervisor, so the candidate's patched sealing
    changes nothing: its outputs are read from that buffer and judged on their values."""
    r, _, _ = run_eval(kgym, REF, _write(tmp_path, "unsealed", UNSEALED))
    assert r["outcome"] == "correct", r["outcome_detail"]
    assert r["metadata"]["lent_buffers"]["used"] >= 7
