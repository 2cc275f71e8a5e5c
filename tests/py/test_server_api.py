"""`kgym serve` over loopback with the simulated evaluator: the KernelGYM API contract (Dr.Kernel client
payload and the fields it reads, polling, idempotency, 400s, batch, cancel, modes), the native API, the bearer
token, restart after SIGKILL, graceful drain and TTL expiry."""
import json
import os
import signal
import threading
import time
import urllib.request

import pytest

from server_util import KGYM_BIN, Server, drkernel_payload, sim_kernel

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

SIM_BASE = ["--evaluator", "simulated", "--gpus", "none"]
SIM = SIM_BASE + ["--cpu-slots", "4"]

# Every key of KernelGYM's EvaluationResponse (§1.4).
RESPONSE_KEYS = {"task_id", "status", "compiled", "correctness", "decoy_kernel", "reference_runtime",
                 "kernel_runtime", "speedup", "metadata", "error_message", "error_code", "submitted_at",
                 "completed_at", "processing_time"}


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path, *SIM)
    yield s
    s.kill()


def test_drkernel_client_flow(server):
    payload = drkernel_payload("parallel_task_000001_0a1b2c3d", sim_kernel("# sim: sleep=0.2"))
    r = server.post("/evaluate", payload)
    assert r.status == 200, r.body
    body = r.json()
    assert RESPONSE_KEYS <= set(body)
    assert body["status"] == "completed" and body["task_id"] == payload["task_id"]
    # The client ignores the POST body and polls /status, then reads /results.
    assert server.poll_status(payload["task_id"]) == "completed"
    res = server.get(f"/results/{payload['task_id']}").json()
    for key in ("status", "decoy_kernel", "correctness", "speedup", "compiled"):
        assert key in res
    for key in ("num_custom_kernels", "num_total_kernels", "custom_kernel_cuda_time_in_profiling_us",
                "total_kernel_run_time_in_profiling_us"):
        assert key in res["metadata"]
    assert res["correctness"] is True and res["speedup"] > 0
    assert server.get("/health").json()["status"] == "healthy"


def test_unknown_task_is_404(server):
    assert server.get("/status/nope").status == 404
    assert server.get("/results/nope").status == 404
    assert server.delete("/tasks/nope").status == 404


def test_validation_errors_are_400_with_kernelgym_body(server):
    bad = drkernel_payload("t-bad", sim_kernel())
    bad["num_perf_trials"] = 5000
    del bad["reference_code"]
    r = server.post("/evaluate", bad)
    assert r.status == 400
    assert r.headers.get("X-Error-Code") == "VALIDATION_ERROR"
    body = r.json()
    assert body["error"] == "RequestValidationError" and body["error_code"] == "VALIDATION_ERROR"
    assert body["task_id"] is None and body["timestamp"].endswith("Z")
    assert "num_perf_trials" in body["message"] and "reference_code" in body["message"]
    assert server.post("/evaluate", b"{not json").status == 400
    short = drkernel_payload("t-short", "x = 1")
    assert server.post("/evaluate", short).status == 400
    # Unknown fields are accepted.
    ok = drkernel_payload("t-extra", sim_kernel())
    ok["some_future_field"] = {"a": 1}
    assert server.post("/evaluate", ok).status == 200


def test_repeated_task_id_returns_stored_result_and_force_refresh_reruns(server):
    p = drkernel_payload("t-idem", sim_kernel())
    first = server.post("/evaluate", p).json()
    time.sleep(0.01)
    again = server.post("/evaluate", p).json()
    assert again["completed_at"] == first["completed_at"]
    assert server.get("/v1/evaluations/t-idem").json()["generation"] == 1
    p["force_refresh"] = True
    refreshed = server.post("/evaluate", p).json()
    assert refreshed["completed_at"] != first["completed_at"]
    assert server.get("/v1/evaluations/t-idem").json()["generation"] == 2
    metrics = server.get("/v1/metrics").body
    assert "kgym_jobs_deduplicated_total 1" in metrics


def test_compile_errors_are_failed_as_in_kernelgym_and_the_opt_in_sees_kgyms_verdict(tmp_path):
    for mode in ("compat", "default"):
        s = Server(tmp_path, *SIM, "--mode", mode, store=str(tmp_path / f"{mode}.sqlite"))
        try:
            r = s.post("/evaluate", drkernel_payload("t-ce", sim_kernel("# sim: outcome=compile_error"))).json()
            assert r["status"] == "failed" and set(r) == RESPONSE_KEYS
            assert r["compiled"] is False and r["error_code"] == "COMPILATION_ERROR"
            assert r["error_message"].startswith("Kernel compilation failed: ")
            assert r["reference_runtime"] == -1.0 and r["kernel_runtime"] == -1.0 and r["speedup"] == 0.0
            assert s.poll_status("t-ce") == "failed"
            # Missing ModelNew: a workflow validation failure, never evaluated.
            v = s.post("/evaluate", drkernel_payload("t-noclass", "import torch\nclass Foo: pass\n")).json()
            assert v["status"] == "failed" and v["error_code"] == "VALIDATION_ERROR"
            # A request that opts in gets kgym's result (compile errors completed, so a model sees them), except
            # under --mode compat.
            body = dict(drkernel_payload("t-opt", sim_kernel("# sim: outcome=compile_error")), kgym_result=True)
            o = s.post("/evaluate", body).json()
            if mode == "default":
                assert o["status"] == "completed" and o["outcome"] == "compile_error"
                assert s.poll_status("t-opt") == "completed"
            else:
                assert o["status"] == "failed" and set(o) == RESPONSE_KEYS
        finally:
            s.kill()


def test_batch_runs_all_tasks(tmp_path):
    s = Server(tmp_path, *SIM, "--mode", "compat")
    try:
        tasks = [drkernel_payload(f"b-{i}", sim_kernel("# sim: sleep=0.3")) for i in range(3)]
        tasks.append(drkernel_payload("b-bad", sim_kernel("# sim: outcome=compile_error")))
        t0 = time.time()
        r = s.post("/evaluate/batch", {"batch_id": "batch-1", "tasks": tasks})
        assert r.status == 200, r.body
        body = r.json()
        assert body["batch_id"] == "batch-1" and body["total_tasks"] == 4
        assert body["failed_tasks"] == 1 and body["completed_tasks"] == 3
        assert [x["task_id"] for x in body["results"]] == [t["task_id"] for t in tasks]
        assert body["batch_status"] == "completed"
        assert time.time() - t0 < 0.3 * 3  # ran concurrently, not one after the other
        assert s.post("/evaluate/batch", {"batch_id": "x", "tasks": []}).status == 400
    finally:
        s.kill()


def test_cancel_really_stops_a_running_job(server):
    r = server.post("/v1/evaluations", drkernel_payload("t-cancel", sim_kernel("# sim: sleep=60")))
    assert r.status == 202 and r.json()["id"] == "t-cancel"
    for _ in range(100):
        if server.get("/status/t-cancel").json()["status"] == "processing":
            break
        time.sleep(0.05)
    d = server.delete("/tasks/t-cancel")
    assert d.status == 200 and d.json() == {"message": "Task t-cancel cancelled successfully"}
    assert server.poll_status("t-cancel", timeout=10) == "failed"  # KernelGYM's status; /v1 says cancelled
    assert server.get("/v1/evaluations/t-cancel").json()["status"] == "cancelled"
    # The slot is free again: a new job completes quickly.
    assert server.post("/evaluate", drkernel_payload("t-after", sim_kernel()), timeout=10).status == 200


def test_a_burst_of_posts_to_a_busy_server_is_not_reset(server):
    # 64 clients post at once (the reward client keeps up to 64 in flight) while the server cannot accept (stopped):
    # the accept queue must hold them all. With cpp-httplib's backlog of 5, 1 to 21 of the 64 were reset (4 of 4 runs).
    body = drkernel_payload("x", sim_kernel() + "#" * 10000)
    errors, codes = [], []

    def one(i):
        try:
            codes.append(server.post("/evaluate", dict(body, task_id="burst-%d" % i), timeout=60).status)
        except OSError as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        for t in threads:
            t.start()
        time.sleep(4)  # past the SYN-ACK retransmissions at 1 and 3 s while nothing is accepted
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert codes == [200] * 64


def test_native_long_poll_and_events(server):
    r = server.post("/v1/evaluations", {"reference_code": drkernel_payload("x", "")["reference_code"],
                                        "kernel_code": sim_kernel("# sim: sleep=0.3")})
    assert r.status == 202
    eid = r.json()["id"]
    assert r.json()["state"] in ("queued", "running")
    with urllib.request.urlopen(server.url + f"/v1/evaluations/{eid}/events", timeout=30) as ev:
        text = ev.read().decode()
    types = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("event: ")]
    assert types[0] == "accepted" and "started" in types and types[-2:] == ["done", "result"]
    final = json.loads([l for l in text.splitlines() if l.startswith("data: ")][-1][6:])
    assert final["task_id"] == eid
    got = server.get(f"/v1/evaluations/{eid}?wait=10").json()
    assert got["state"] == "done" and got["result"]["correctness"] is True
    prom = server.get("/v1/metrics").body
    for name in ("kgym_queue_depth", "kgym_running", "kgym_outcomes_total{outcome=\"correct\"}",
                 "kgym_phase_seconds_sum", "kgym_device_busy_fraction{device=\"cpu\"}"):
        assert name in prom


def test_kernelgym_info_endpoints(server):
    server.post("/evaluate", drkernel_payload("t-info", sim_kernel()))
    h = server.get("/health").json()
    assert h["status"] == "healthy" and "gpu_status" in h and "queue_status" in h
    assert h["total_processed"] >= 1
    w = server.get("/workers/status").json()
    assert any(v["device"] == "cpu" for v in w.values())
    q = server.get("/queue/status").json()
    assert {"pending", "pending_by_prefix", "worker_queues"} <= set(q)
    m = server.get("/metrics").json()
    assert m["performance_metrics"]["success_rate"] == 1.0


def test_bearer_token(tmp_path):
    (tmp_path / "token").write_text("s3cret\n")
    s = Server(tmp_path, *SIM, "--token-file", str(tmp_path / "token"))
    try:
        assert s.get("/health").status == 200
        s.token = None
        assert s.post("/evaluate", drkernel_payload("t-tok", sim_kernel())).status == 401
        assert s.get("/status/t-tok").status == 401
        s.token = "wrong"
        assert s.get("/queue/status").status == 401
        s.token = "s3cret"
        assert s.post("/evaluate", drkernel_payload("t-tok", sim_kernel())).status == 200
    finally:
        s.kill()


def test_sigkill_and_restart_loses_nothing(tmp_path):
    store = str(tmp_path / "crash.sqlite")
    s = Server(tmp_path, *SIM_BASE, "--cpu-slots", "2", store=store)
    ids = [f"k-{i}" for i in range(12)]
    for i in ids:
        assert s.post("/v1/evaluations", drkernel_payload(i, sim_kernel("# sim: sleep=0.4"))).status == 202
    time.sleep(0.6)  # some done, two running, the rest queued
    s.kill()
    s2 = Server(tmp_path, *SIM, store=store)
    try:
        assert "recovered" in s2.startup_line
        for i in ids:
            got = s2.get(f"/v1/evaluations/{i}?wait=20").json()
            assert got["state"] == "done", got
            assert got["result"]["correctness"] is True
    finally:
        s2.kill()


def test_sigterm_drains_running_evaluations(tmp_path):
    s = Server(tmp_path, *SIM_BASE, "--cpu-slots", "1")
    out = {}

    def blocking():
        out["r"] = s.post("/evaluate", drkernel_payload("t-drain", sim_kernel("# sim: sleep=1.0")))

    t = threading.Thread(target=blocking)
    t.start()
    for _ in range(100):
        if s.get("/status/t-drain").json().get("status") == "processing":
            break
        time.sleep(0.02)
    s.proc.send_signal(signal.SIGTERM)
    t.join(20)
    assert s.proc.wait(20) == 0
    assert out["r"].status == 200 and out["r"].json()["status"] == "completed"


def test_results_expire_after_ttl(tmp_path):
    s = Server(tmp_path, *SIM, "--result-ttl", "1")
    try:
        assert s.post("/evaluate", drkernel_payload("t-ttl", sim_kernel())).status == 200
        assert s.get("/results/t-ttl").status == 200
        for _ in range(60):
            if s.get("/results/t-ttl").status == 404:
                break
            time.sleep(0.1)
        assert s.get("/results/t-ttl").status == 404
    finally:
        s.kill()


def test_kernelgym_worker_routes_answer_501_naming_kgym_worker(server):
    """KernelGYM's GPU workers cannot join a kgym server: their routes say so (a KernelGYM worker shuts itself down on
    any non-200 heartbeat) and name the replacement, instead of FastAPI's 404."""
    for path in ("/worker/register?worker_id=w&device=cuda:0", "/worker/heartbeat?worker_id=w",
                 "/worker/unregister?worker_id=w", "/worker/evict_from_lb?worker_id=w", "/node/allocate?hostname=h"):
        r = server.post(path, None)
        assert r.status == 501, (path, r.status, r.body)
        body = r.json()
        assert body["error_code"] == "NOT_IMPLEMENTED" and "kgym worker --redis" in body["detail"]
        assert body["replacement"] == "kgym worker --redis URL"
    assert server.get("/worker/nothing").status == 404  # other unknown routes stay FastAPI's 404


def test_debug_validate_checks_a_request_without_accepting_it(server):
    ok = server.post("/debug/validate", drkernel_payload("dv-ok", sim_kernel())).json()
    assert ok["valid"] is True and ok["errors"] == []
    assert ok["request_info"]["task_id"] == "dv-ok" and ok["request_info"]["backend"] == "triton"
    bad = server.post("/debug/validate", drkernel_payload("dv-bad", sim_kernel()) | {"num_perf_trials": -1}).json()
    assert bad["valid"] is False and "num_perf_trials" in bad["errors"][0]
    no_class = server.post("/debug/validate", drkernel_payload("dv-nc", "import torch\n")).json()
    assert no_class["valid"] is False and "ModelNew" in no_class["errors"][0]
    assert server.get("/status/dv-ok").status == 404  # nothing was accepted
