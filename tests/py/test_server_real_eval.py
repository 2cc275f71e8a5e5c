"""`kgym serve --gpus none` with the real evaluator on the CPU: an inline ReLU reference, a correct candidate,
a wrong one and one that does not compile, through the KernelGYM endpoints in both modes (tests/py/
test_kernelgym_compat.py holds every case of KernelGYM's protocol)."""
import os
import re

import pytest

from server_util import KERNEL_OK, KGYM_BIN, REF, Server, small_payload

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

WRONG = KERNEL_OK.replace("torch.clamp(x, min=0.0)", "x * 2.0")
BROKEN = KERNEL_OK.replace("def forward(self, x):", "def forward(self, x)")  # syntax error


def small(task_id, code):
    return small_payload(task_id, code)


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path, "--gpus", "none", "--cpu-slots", "2")
    yield s
    s.kill()


def test_real_evaluations_on_cpu(server):
    ok = server.post("/evaluate", small("real-ok", KERNEL_OK), timeout=300).json()
    if ok.get("error_code") == "SYSTEM_ERROR":
        pytest.skip("evaluator infrastructure unavailable here: " + str(ok.get("error_message")))
    assert ok["status"] == "completed" and ok["compiled"] is True and ok["correctness"] is True, ok
    assert ok["kernel_runtime"] > 0 and ok["reference_runtime"] > 0
    wrong = server.post("/evaluate", small("real-wrong", WRONG), timeout=300).json()
    assert wrong["status"] == "completed" and wrong["correctness"] is False and wrong["speedup"] == 0.0
    broken = server.post("/evaluate", small("real-broken", BROKEN), timeout=300).json()
    # KernelGYM's answer: failed, with the compiler's message.
    assert broken["status"] == "failed" and broken["compiled"] is False
    assert broken["error_message"].startswith("Kernel compilation failed: ")
    assert server.poll_status("real-broken") == "failed"


def test_sigterm_cuts_a_hanging_reference_short(tmp_path):
    """A reference run is shared by every request for that reference, so one request's cancel leaves it running;
    shutdown kills it anyway (Evaluator::CancelAll): SIGTERM with --drain-timeout 1 ends the server long before the
    request's 1000 s timeout would."""
    import signal
    import time
    hang = REF.replace("return torch.relu(x)", "while True:\n            pass")
    s = Server(tmp_path, "--gpus", "none", "--cpu-slots", "1", "--drain-timeout", "1")
    try:
        body = small("hang-ref", KERNEL_OK) | {"reference_code": hang, "timeout": 1000}
        assert s.post("/v1/evaluations", body).status == 202
        for _ in range(200):  # until the reference worker runs
            if s.get("/status/hang-ref").json().get("status") == "processing":
                break
            time.sleep(0.05)
        time.sleep(1.0)
        s.proc.send_signal(signal.SIGTERM)
        assert s.proc.wait(60) == 0  # raises TimeoutExpired if shutdown waits for the reference
    finally:
        s.kill()


def test_reference_lookahead_prepares_the_next_tasks_reference(tmp_path):
    """One CPU slot, two tasks queued one behind the other: while task A's evaluation runs, the scheduler's look-ahead
    computes task B's reference, so B's evaluation finds it made ("reference_prepared_by": "look-ahead") and does not
    start its reference worker itself. With --reference-lookahead 0, B computes its own."""
    ref_b = REF.replace("torch.randn(64, 64)", "torch.randn(32, 96)")
    for lookahead, want in (("1", "look-ahead"), ("0", "evaluation")):
        (tmp_path / lookahead).mkdir()
        s = Server(tmp_path / lookahead, "--gpus", "none", "--cpu-slots", "1", "--reference-lookahead", lookahead)
        try:
            for tid, ref in (("la-a", REF), ("la-b", ref_b)):
                assert s.post("/v1/evaluations", small(tid, KERNEL_OK) | {"reference_code": ref}).status == 202
            a = s.get("/v1/evaluations/la-a?wait=240", timeout=300).json()
            b = s.get("/v1/evaluations/la-b?wait=240", timeout=300).json()
            if "SYSTEM_ERROR" in (a["result"].get("error_code"), b["result"].get("error_code")):
                pytest.skip("evaluator infrastructure unavailable here")
            assert a["result"]["outcome"] == b["result"]["outcome"] == "correct", (a, b)
            assert b["result"]["metadata"]["reference_prepared_by"] == want
            prom = s.get("/v1/metrics").body
            prepared = float(re.search(r'kgym_references_prepared_total\{device="cpu"\} ([\d.]+)', prom).group(1))
            assert (prepared >= 1) == (lookahead == "1"), prom
        finally:
            s.kill()


def test_quiet_timing_holds_other_work_back_and_says_how_long(tmp_path):
    """`--quiet-timing`: every evaluation reports how long its device work waited for other evaluations' timed calls
    (metadata "quiet_wait_s"; "reference_quiet_wait_s" for the reference's job), and the verdicts are the same.
    Without the flag nothing waits and nothing is reported."""
    for quiet in (True, False):
        d = tmp_path / ("quiet" if quiet else "plain")
        d.mkdir()
        s = Server(d, "--gpus", "none", "--cpu-slots", "2", *(["--quiet-timing"] if quiet else []))
        try:
            jobs = [("q-ok-%d" % i, KERNEL_OK) for i in range(3)] + [("q-wrong", WRONG)]
            for tid, code in jobs:
                assert s.post("/v1/evaluations", small(tid, code)).status == 202
            res = {tid: s.get("/v1/evaluations/%s?wait=240" % tid, timeout=300).json()["result"] for tid, _ in jobs}
            if any(r.get("error_code") == "SYSTEM_ERROR" for r in res.values()):
                pytest.skip("evaluator infrastructure unavailable here")
            assert [res[t]["outcome"] for t, _ in jobs] == ["correct"] * 3 + ["incorrect"], res
            for r in res.values():
                md = r["metadata"]
                assert ("quiet_wait_s" in md) == quiet, md.keys()
                assert ("reference_quiet_wait_s" in md) == quiet
                if quiet:
                    assert md["quiet_wait_s"] >= 0 and md["reference_quiet_wait_s"] >= 0
        finally:
            s.kill()
