"""KernelGYM's protocol, by default: `kgym serve --gpus none` evaluating for real on the CPU answers every case a
KernelGYM client meets with KernelGYM's status, error code and fields (issue 35).

The expectations are KernelGYM's documented models and result paths (shared/research/kernelgym.md §1.4-1.9, §4.1,
§4.2): its EvaluationResponse, TaskStatusResponse, BatchEvaluationResponse and WorkflowResponse models, its
TaskStatus and ErrorCode values, the outcome matrix of its workflow (failed whenever compiled is false, timeouts
through its failed-result path, a cancelled task as its fail_task record), its error bodies. Written down here as
facts, independently of kgym's own table (src/core/kernelgym_schema.cc), so the two can disagree.
"""
import json
import os
import threading
import time

import pytest

from server_util import KGYM_BIN, Server

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidates")


def source(name):
    with open(os.path.join(HERE, name + ".py")) as f:
        return f.read()


REF = source("ref_linear_relu")

# ---- KernelGYM's models (facts) ----
EVALUATION_RESPONSE = {"task_id", "status", "compiled", "correctness", "decoy_kernel", "reference_runtime",
                       "kernel_runtime", "speedup", "metadata", "error_message", "error_code", "submitted_at",
                       "completed_at", "processing_time"}
TASK_STATUS_RESPONSE = {"task_id", "status", "progress", "estimated_completion", "queue_position", "assigned_device"}
BATCH_RESPONSE = {"batch_id", "total_tasks", "completed_tasks", "failed_tasks", "results", "batch_status",
                  "submitted_at", "completed_at"}
WORKFLOW_RESPONSE = {"task_id", "status", "result", "error_message", "error_code", "submitted_at", "completed_at"}
# KernelEvaluationResult, the kernel_simple workflow's result, without its status (§2.9).
KERNEL_RESULT = {"task_id", "base_task_id", "compiled", "correctness", "decoy_kernel", "kernel_runtime", "metadata",
                 "error_message", "error_code"}
VALIDATION_ERROR_BODY = {"error", "message", "error_code", "task_id", "timestamp"}
HEALTH = {"status", "timestamp", "gpu_status", "queue_status", "memory_usage", "active_tasks", "total_processed",
          "uptime"}
TASK_STATUSES = {"pending", "processing", "completed", "failed", "timeout"}
ERROR_CODES = {"VALIDATION_ERROR", "COMPILATION_ERROR", "RUNTIME_ERROR", "CORRECTNESS_ERROR", "TIMEOUT_ERROR",
               "SYSTEM_ERROR", "RESOURCE_ERROR", "UNKNOWN_ERROR", "SYNTAX_ERROR", "IMPORT_ERROR",
               "INSTANTIATION_ERROR"}
# Every key KernelGYM's result metadata can hold (§4.2), over all its result paths.
METADATA_KEYS = {"hardware", "device", "gpu_name", "backend", "num_correct_trials", "num_perf_trials",
                 "kernel_task_id", "reference_task_id", "compilation_error", "compilation_error_name",
                 "validation_error", "error", "runtime_error", "runtime_error_name", "correctness_issue",
                 "correctness_issue_name", "max_difference", "avg_difference", "correctness_trials",
                 "correctness_skipped", "triton_profiler_matches", "profiling", "num_custom_kernels",
                 "num_total_kernels", "triton_kernel_coverage", "total_kernel_run_time_in_profiling_us",
                 "custom_kernel_cuda_time_in_profiling_us", "custom_kernel_cuda_time_coverage",
                 "error_during_performance", "model_load_error", "model_load_error_name", "cases_source",
                 "num_cases", "correctness_failed_cases", "runtime_stats", "performance_skipped"}

# The outcome matrix (§4.1): candidate -> what KernelGYM answers. `message` is how its error_message begins.
CASES = {
    "syntax_error": dict(status="failed", compiled=False, correctness=False, error_code="COMPILATION_ERROR",
                         message="Kernel compilation failed"),
    "missing_modelnew": dict(status="failed", compiled=False, correctness=False, error_code="VALIDATION_ERROR",
                             message="Kernel code validation failed: Code must contain a 'ModelNew' class"),
    # `class ModelNew` only in a comment: the substring check passes, loading finds no class (a compile error).
    "modelnew_in_comment": dict(status="failed", compiled=False, correctness=False, error_code="COMPILATION_ERROR",
                                message="Kernel compilation failed"),
    "forward_exception": dict(status="completed", compiled=True, correctness=False, error_code="RUNTIME_ERROR",
                              message="Kernel execution failed"),
    "wrong_values": dict(status="completed", compiled=True, correctness=False, error_code="CORRECTNESS_ERROR",
                         message="Kernel produced incorrect results"),
    "wrong_shape": dict(status="completed", compiled=True, correctness=False, error_code="CORRECTNESS_ERROR",
                        message="Kernel produced incorrect results"),
    "infinite_loop": dict(status="failed", compiled=False, correctness=False, error_code="TIMEOUT_ERROR",
                          message="Task processing failed"),
    "good": dict(status="completed", compiled=True, correctness=True, error_code=None, message=None),
}


def payload(task_id, kernel, timeout=60, **extra):
    """The body Dr.Kernel's reward client posts (compute_batch_rewards), with CPU-sized trial counts."""
    p = {"task_id": task_id, "reference_code": REF, "kernel_code": kernel, "backend": "triton",
         "num_correct_trials": 2, "num_perf_trials": 5, "timeout": timeout, "priority": "normal",
         "entry_point": "Model", "is_valid": False, "verbose_errors": True, "enable_profiling": True,
         "detect_decoy_kernel": True, "reference_backend": None}
    p.update(extra)
    return p


def kernelgym_correct_lower_bound(got):
    """The smallest EvaluationResponse KernelGYM could answer for the same correct evaluation: the same top-level
    values, and the metadata its kernel and reference subtasks always write for a correct Triton candidate (§4.2),
    with kgym's values where both have the key and empty ones elsewhere: a profiling table with no kernel rows,
    no Triton launch strings, zero times."""
    md = got["metadata"]
    zero_cov = {"num_custom_kernels": 0, "num_total_kernels": 0, "custom_kernel_cuda_time_in_profiling_us": 0.0,
                "total_kernel_run_time_in_profiling_us": 0.0,
                "triton_kernel_coverage": "Run 0 custom kernels / Total 0 kernels, Coverage: 0.00%",
                "custom_kernel_cuda_time_coverage":
                    "Custom kernel CUDA time: 0.00us / Total time: 0.00us, Coverage: 0.00%"}
    bound_md = {"hardware": md.get("hardware", ""), "device": md.get("device", ""), "gpu_name": "",
                "backend": "triton", "num_correct_trials": 2, "num_perf_trials": 5,
                "correctness_trials": "(2 / 2)", "triton_profiler_matches": [],
                "profiling": {"kernels": [], "kernel_count": 0, "total_cpu_time_us": 0.0, "total_cuda_time_us": 0.0,
                              "total_self_cuda_time_us": 0.0, "cuda_device_event_count": 0,
                              "cuda_time_event_count": 0, "self_cuda_time_event_count": 0,
                              "memory_stats": {"allocated_mb": 0.0, "reserved_mb": 0.0, "max_allocated_mb": 0.0,
                                               "max_reserved_mb": 0.0}},
                "reference_task_id": got["task_id"] + "_ref", "kernel_task_id": got["task_id"] + "_kernel"}
    bound_md.update({k: md.get(k, v) for k, v in zero_cov.items()})
    bound = dict(got, metadata=bound_md, submitted_at=None, processing_time=None)
    return len(json.dumps(bound))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server; every case is submitted at once (each a blocking POST /evaluate in its own thread, as the reward
    client's workers do) and its POST answer kept."""
    s = Server(tmp_path_factory.mktemp("compat"), "--gpus", "none", "--cpu-slots", "4")
    answers, threads = {}, []

    def post(name):
        timeout = 10 if name == "infinite_loop" else 60  # KernelGYM's smallest timeout
        answers[name] = s.post("/evaluate", payload("c-" + name, source(name), timeout=timeout), timeout=300)

    for name in CASES:
        threads.append(threading.Thread(target=post, args=(name,)))
        threads[-1].start()
    for t in threads:
        t.join(300)
    good = answers["good"].json()
    if good.get("error_code") == "SYSTEM_ERROR":
        s.kill()
        pytest.skip("evaluator infrastructure unavailable here: " + str(good.get("error_message")))
    yield s, answers
    s.kill()


@pytest.mark.parametrize("name", list(CASES))
def test_each_case_answers_as_kernelgym(served, name):
    s, answers = served
    want = CASES[name]
    post = answers[name]
    assert post.status == 200, post.body
    for body in (post.json(), s.get("/results/c-" + name).json()):
        assert set(body) == EVALUATION_RESPONSE
        assert body["status"] == want["status"], body
        assert body["compiled"] is want["compiled"] and body["correctness"] is want["correctness"], body
        assert body["error_code"] == want["error_code"], body
        assert body["decoy_kernel"] is False
        if want["message"] is None:
            assert body["error_message"] is None
        else:
            assert body["error_message"].startswith(want["message"]), body["error_message"]
        assert set(body["metadata"]) <= METADATA_KEYS, set(body["metadata"]) - METADATA_KEYS
        if not want["correctness"]:
            assert body["speedup"] == 0.0 and body["reference_runtime"] == -1.0
        if want["status"] == "failed" or not want["compiled"]:
            assert body["kernel_runtime"] == -1.0
        assert body["submitted_at"].endswith("Z") and body["completed_at"]
        assert body["processing_time"] >= 0
    status = s.get("/status/c-" + name).json()
    assert set(status) == TASK_STATUS_RESPONSE and status["status"] == want["status"]


def test_failed_result_paths_carry_the_error_in_metadata(served):
    """Validation failures and timeouts go through KernelGYM's failed-result builders: metadata {"error": message}."""
    s, answers = served
    for name in ("missing_modelnew", "infinite_loop"):
        body = answers[name].json()
        assert body["metadata"]["error"] == body["error_message"]
    assert "kernel_task_id" not in answers["missing_modelnew"].json()["metadata"]  # never reached a subtask


def test_correct_result_is_no_larger_than_kernelgyms(served):
    s, answers = served
    good = s.get("/results/c-good").json()
    assert good["speedup"] == pytest.approx(good["reference_runtime"] / good["kernel_runtime"], rel=1e-6)
    size = len(s.get("/results/c-good").body)
    assert size <= kernelgym_correct_lower_bound(good), (size, kernelgym_correct_lower_bound(good))
    # kgym's own account of the same evaluation, on the native API, is much richer.
    native = s.get("/v1/evaluations/c-good").json()["result"]
    assert native["outcome"] == "correct" and "timing" in native


def test_batch_with_a_failure(served):
    s, _ = served
    tasks = [payload("b-good", source("good")), payload("b-broken", source("syntax_error"))]
    r = s.post("/evaluate/batch", {"batch_id": "batch-35", "tasks": tasks}, timeout=300)
    assert r.status == 200, r.body
    body = r.json()
    assert set(body) == BATCH_RESPONSE
    assert (body["total_tasks"], body["completed_tasks"], body["failed_tasks"]) == (2, 1, 1)
    assert body["batch_status"] == "completed"
    assert [x["status"] for x in body["results"]] == ["completed", "failed"]
    assert all(set(x) == EVALUATION_RESPONSE for x in body["results"])


def test_cancelled_task_is_kernelgyms_fail_task_record(served):
    s, _ = served
    box = {}
    t = threading.Thread(target=lambda: box.update(r=s.post("/evaluate", payload("c-cancel", source(
        "infinite_loop"), timeout=120), timeout=300)))
    t.start()
    for _ in range(200):
        st = s.get("/status/c-cancel")
        if st.status == 200 and st.json()["status"] == "processing":
            break
        time.sleep(0.1)
    d = s.delete("/tasks/c-cancel")
    assert d.status == 200 and d.json() == {"message": "Task c-cancel cancelled successfully"}
    t.join(120)
    for body in (box["r"].json(), s.get("/results/c-cancel").json()):
        assert set(body) == EVALUATION_RESPONSE
        assert body["status"] == "failed" and body["error_code"] == "SYSTEM_ERROR"
        assert body["error_message"] == "Task cancelled"
        assert all(body[k] is None for k in ("compiled", "correctness", "decoy_kernel", "reference_runtime",
                                              "kernel_runtime", "speedup", "metadata"))
    assert s.get("/status/c-cancel").json()["status"] == "failed"  # never "cancelled": not a KernelGYM status
    assert s.get("/v1/evaluations/c-cancel").json()["status"] == "cancelled"  # kgym's own word, on /v1
    # A finished task cannot be cancelled again.
    assert s.delete("/tasks/c-cancel").status == 404


def test_error_paths(served):
    s, _ = served
    bad = payload("e-bad", source("good"))
    bad["num_perf_trials"] = 5000
    r = s.post("/evaluate", bad)
    assert r.status == 400 and set(r.json()) == VALIDATION_ERROR_BODY
    assert r.headers.get("X-Error-Code") == "VALIDATION_ERROR" and r.json()["error_code"] == "VALIDATION_ERROR"
    for path in ("/status/nope", "/results/nope", "/workflow/results/nope"):
        r = s.get(path)
        assert r.status == 404 and set(r.json()) == {"detail"}, path
    assert s.delete("/tasks/nope").status == 404
    assert s.delete("/tasks/c-good").status == 404  # finished: KernelGYM's cancel_task refuses it
    for method, path in (("GET", "/no/such/route"), ("POST", "/no/such/route")):
        r = s.request(method, path, body={} if method == "POST" else None)
        assert r.status == 404 and r.json() == {"detail": "Not Found"}
    assert s.post("/evaluate/batch", {"batch_id": "x", "tasks": []}).status == 400
    r = s.post("/workflow/submit", {"workflow": "kernelbench", "payload": {}})
    assert r.status == 400 and set(r.json()) == {"detail"}
    r = s.post("/workflow/submit", {"workflow": "nope", "task_id": "w-nope", "payload": {}})
    assert r.status == 400 and set(r.json()) == {"detail"}
    h = s.get("/health")
    assert h.status == 200 and set(h.json()) >= HEALTH and h.json()["status"] == "healthy"


def test_every_status_and_code_is_kernelgyms(served):
    s, answers = served
    for name in CASES:
        body = s.get("/results/c-" + name).json()
        assert body["status"] in TASK_STATUSES
        assert body["error_code"] is None or body["error_code"] in ERROR_CODES


def test_opt_in_returns_kgyms_result_and_compat_refuses_it(served, tmp_path):
    s, _ = served
    r = s.post("/evaluate", payload("o-broken", source("syntax_error"), kgym_result=True), timeout=300).json()
    assert r["outcome"] == "compile_error" and r["status"] == "completed" and "outcome_detail" in r
    assert s.get("/status/o-broken").json()["status"] == "completed"
    strict = Server(tmp_path, "--gpus", "none", "--mode", "compat")
    try:
        r = strict.post("/evaluate", payload("o-strict", source("syntax_error"), kgym_result=True), timeout=300)
        assert set(r.json()) == EVALUATION_RESPONSE and r.json()["status"] == "failed"
    finally:
        strict.kill()


def test_workflow_kernelbench(served):
    s, _ = served
    body = {"workflow": "kernelbench", "task_id": "w-kb", "payload": payload("ignored", source("wrong_values"))}
    r = s.post("/workflow/submit", body, timeout=300)
    assert r.status == 200, r.body
    got = r.json()
    assert set(got) == WORKFLOW_RESPONSE and got["task_id"] == "w-kb"
    assert got["status"] == "completed" and got["error_code"] == "CORRECTNESS_ERROR"
    assert set(got["result"]) <= EVALUATION_RESPONSE - {"status"} and got["result"]["correctness"] is False
    again = s.get("/workflow/results/w-kb").json()
    assert again["result"]["completed_at"] == got["result"]["completed_at"]


SIMPLE_KERNEL = '''import torch

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y

def get_init_inputs():
    return []

def get_inputs():
    return [torch.randn(1024), torch.randn(1024)]
'''
SIMPLE_CASES = '''
def get_cases():
    x = torch.randn(1024)
    y = torch.randn(1024)
    return [{"inputs": [x, y], "outputs": x + y}, {"inputs": [y, y], "outputs": 2 * y}]
'''


def simple(task_id, kernel, **extra):
    p = {"task_id": task_id, "kernel_code": kernel, "entry_point": "ModelNew", "backend": "triton",
         "device": "cuda:0", "run_correctness": True, "run_performance": True, "num_perf_trials": 5}
    p.update(extra)
    return {"workflow": "kernel_simple", "task_id": task_id, "payload": p}


def test_workflow_kernel_simple(served):
    """KernelGYM's README example 1 on the CPU: the kernel's own get_cases() with expected outputs."""
    s, _ = served
    r = s.post("/workflow/submit", simple("ks-ok", SIMPLE_KERNEL + SIMPLE_CASES), timeout=300)
    assert r.status == 200, r.body
    got = r.json()
    assert set(got) == WORKFLOW_RESPONSE and got["status"] == "completed", got
    assert set(got["result"]) - {"completed_at"} == KERNEL_RESULT
    assert got["result"]["compiled"] is True and got["result"]["correctness"] is True, got
    assert got["result"]["kernel_runtime"] > 0
    assert set(got["result"]["metadata"]) <= METADATA_KEYS
    wrong = s.post("/workflow/submit", simple("ks-wrong", SIMPLE_KERNEL.replace("x + y", "x - y") + SIMPLE_CASES),
                   timeout=300).json()
    assert wrong["status"] == "completed" and wrong["result"]["correctness"] is False, wrong
    # No expected outputs: nothing to check, correctness null (KernelGYM's correctness_skipped).
    unchecked = s.post("/workflow/submit", simple("ks-none", SIMPLE_KERNEL), timeout=300).json()
    assert unchecked["status"] == "completed" and unchecked["result"]["correctness"] is None, unchecked
    assert unchecked["result"]["kernel_runtime"] > 0
    # Missing entry point: KernelGYM's workflow validation.
    invalid = s.post("/workflow/submit", simple("ks-invalid", "import torch\nclass Other: pass\n"), timeout=60).json()
    assert invalid["status"] == "failed" and invalid["error_code"] == "VALIDATION_ERROR"
    assert s.get("/results/ks-ok").json()["speedup"] is None  # read as an EvaluationResponse: no reference


def test_workflow_kernel_simple_edge_cases_as_kernelgym_reports_them(served):
    """A kernel that fails to load is KernelGYM's RUNTIME_ERROR "Failed to load cases" (that workflow has no reference;
    kgym's is generated from the kernel's cases), and the backend is reported as sent."""
    s, _ = served
    broken = SIMPLE_KERNEL + SIMPLE_CASES + "\nraise ImportError('no such module: fancy_kernels')\n"
    got = s.post("/workflow/submit", simple("ks-load", broken), timeout=300).json()
    assert got["status"] == "failed" and got["error_code"] == "RUNTIME_ERROR", got
    assert got["error_message"].startswith("Failed to load cases"), got
    assert "fancy_kernels" in got["error_message"]
    assert "reference" not in got["error_message"]
    tl = s.post("/workflow/submit", simple("ks-tilelang", SIMPLE_KERNEL + SIMPLE_CASES, backend="tilelang"),
                timeout=300).json()
    assert tl["status"] == "completed" and tl["result"]["correctness"] is True, tl
    assert tl["result"]["metadata"].get("backend") == "tilelang", tl["result"]["metadata"]
