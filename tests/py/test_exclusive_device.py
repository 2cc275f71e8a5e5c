"""Exclusive device time on the CPU, as a user's shell sees it: `kgym serve --cpu-slots 2` with an evaluation whose
timed calls take seconds (the holder) and a neighbour whose __init__ burns the CPU for seconds, as a long autotune or
warm-up on a GPU would. While the holder's timed holds run, the neighbour's worker is frozen (cgroup freezer where
this machine has one, else SIGSTOP; src/sandbox/freezer.h), and the time it spends frozen is not counted against its
own 10 s limit: it finishes correct although its wall time may pass that limit."""
import os

import pytest

from server_util import KGYM_BIN, REF, Server, drkernel_payload

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

# ~10-20 ms of CPU per call on a CI VM: 250 timed calls hold the device for a few seconds (the reference's and the
# candidate's holds alike).
HOLDER_REF = """import torch
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)
def get_inputs():
    return [torch.randn(320, 320), torch.randn(320, 320)]
def get_init_inputs():
    return []
"""
HOLDER = HOLDER_REF.replace("class Model(", "class ModelNew(")

# The neighbour's __init__ uses 2 s of CPU time (not of wall time: frozen, it makes no progress).
NEIGHBOUR = """import time
import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        t0 = time.process_time()
        x = 0
        while time.process_time() - t0 < 2.0:
            x += 1
    def forward(self, x):
        return torch.relu(x)
"""


def test_a_hold_freezes_its_neighbour_without_costing_it_its_time_limit(tmp_path):
    # Memory admission off: it would run the two unknown configurations one after the other.
    s = Server(tmp_path, "--gpus", "none", "--cpu-slots", "2", "--spare-workers", "0", "--mem-budget", "0")
    try:
        holder = drkernel_payload("holder", HOLDER, HOLDER_REF)
        holder.update({"num_correct_trials": 1, "num_perf_trials": 250, "min_perf_trials": 0, "num_warmup": 1,
                       "timeout": 300})
        neighbour = drkernel_payload("neighbour", NEIGHBOUR, REF)
        neighbour.update({"num_correct_trials": 1, "run_performance": False, "timeout": 10})
        assert s.post("/v1/evaluations", holder).status == 202
        assert s.post("/v1/evaluations", neighbour).status == 202
        res = {t: s.get("/v1/evaluations/%s?wait=280" % t, timeout=300).json()["result"]
               for t in ("holder", "neighbour")}
        if any(r.get("error_code") == "SYSTEM_ERROR" for r in res.values()):
            pytest.skip("evaluator infrastructure unavailable here: %s" % res)
        h, n = res["holder"], res["neighbour"]
        assert h["outcome"] == "correct", h["outcome_detail"]
        assert n["outcome"] == "correct", (n["outcome_detail"], n.get("error_message"))
        hmd, nmd = h["metadata"], n["metadata"]
        # The holder's holds (its reference's and its own) froze the other workers of the device ...
        frozen = hmd["timing_lock"]["neighbours_frozen"] + hmd["reference_timing_lock"]["neighbours_frozen"]
        assert frozen >= 1, (hmd["timing_lock"], hmd["reference_timing_lock"])
        # ... among them the neighbour's candidate worker, which says how long.
        assert nmd["frozen_s"] > 0.5, nmd.get("frozen_s")
        # Its limit counts its own time only: what it spent frozen comes on top.
        if n["metadata"]["evaluation_s"] > 10:
            assert nmd["frozen_s"] > n["metadata"]["evaluation_s"] - 10
    finally:
        s.kill()
