"""`kgym serve --gpus none` with the real evaluator on the CPU: an inline ReLU reference, a correct candidate,
a wrong one and one that does not compile, through the KernelGYM endpoints in both modes."""
import os

import pytest

from server_util import KERNEL_OK, KGYM_BIN, REF, Server, drkernel_payload

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

WRONG = KERNEL_OK.replace("torch.clamp(x, min=0.0)", "x * 2.0")
BROKEN = KERNEL_OK.replace("def forward(self, x):", "def forward(self, x)")  # syntax error


def small(task_id, code):
    p = drkernel_payload(task_id, code, REF)
    p.update({"num_correct_trials": 2, "num_perf_trials": 5, "timeout": 120})
    return p


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
    # Default mode: the model sees the compile error.
    assert broken["status"] == "completed" and broken["compiled"] is False
    assert broken["error_message"]
    assert server.poll_status("real-broken") == "completed"


def test_compat_mode_reports_compile_failures_as_failed(tmp_path):
    s = Server(tmp_path, "--gpus", "none", "--mode", "compat")
    try:
        r = s.post("/evaluate", small("compat-broken", BROKEN), timeout=300).json()
        if r.get("error_code") == "SYSTEM_ERROR":
            pytest.skip("evaluator infrastructure unavailable here")
        assert r["status"] == "failed" and r["compiled"] is False
        assert s.poll_status("compat-broken") == "failed"
    finally:
        s.kill()


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
