"""Full 3-turn `kgym agent` runs on CPU with the real in-process evaluator over tasks from tasks/,
driven by a scripted OpenAI server: correct and wrong plain-torch candidates, a real Triton solution
that cannot run here, malformed responses (no code block, truncated, empty), HTTP 429/500/timeouts, a
mid-run kill and a resume. The trajectories and the grade are checked against what the script implies."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from agent_fakes import FakeOpenAI, Reply

KGYM = os.environ.get("KGYM_BIN", "")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.skipif(not (KGYM and os.path.exists(KGYM)), reason="KGYM_BIN not built")

RELU_OK = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n" \
          "        super().__init__()\n\n    def forward(self, x):\n        return torch.clamp(x, min=0.0)\n"
RELU_BAD = RELU_OK.replace("torch.clamp(x, min=0.0)", "torch.where(x > 0, x, 0.5 * x)")
LEAKY_OK = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n" \
           "    def __init__(self, negative_slope):\n        super().__init__()\n        self.s = negative_slope\n\n" \
           "    def forward(self, x):\n        return torch.where(x >= 0, x, x * self.s)\n"
LEAKY_BAD = LEAKY_OK.replace("x * self.s", "x * 0.3")


def fenced(code):
    return f"Plan: keep it simple.\n```python\n{code}```\n"


def triton_wrong():
    with open(os.path.join(ROOT, "tasks/solutions/level1/relu_wrong.py")) as f:
        return fenced(f.read())


# (task, sample) -> per turn: (response, correct?)
PLAN = {
    ("relu", 0): [(fenced(RELU_OK), True), (fenced(RELU_BAD), False), (fenced(RELU_OK), True)],
    ("relu", 1): [("", False), (None, False), (fenced(RELU_OK), True)],  # None = the Triton solution
    ("leaky_relu", 0): [("No code from me, just thoughts.", False), (fenced(LEAKY_OK), True),
                        (fenced(LEAKY_OK), True)],
    ("leaky_relu", 1): [(fenced(LEAKY_OK), True), ("```python\nimport torch\nclass ModelNew(", False),
                        (fenced(LEAKY_BAD), False)],
}
FAULTS = {("leaky_relu", 0, 2): 429, ("leaky_relu", 1, 1): 500, ("relu", 1, 3): "timeout"}


def task_of(first):
    return "leaky_relu" if "leaky_relu" in first else "relu"


def script_for(hang):
    def script(task, sample, turn, attempt, body):
        fault = FAULTS.get((task, sample, turn)) if attempt == 0 else None
        if fault == "timeout":
            return Reply(content=fenced(RELU_OK), delay_s=2.5)
        if fault:
            return Reply(status=fault, raw_body='{"error": "injected"}')
        if hang is not None and (task, sample, turn) == ("relu", 1, 2):
            return Reply(content="never", hang=hang)
        text = PLAN[(task, sample)][turn - 1][0]
        if text is None:
            text = triton_wrong()
        return Reply(content=text, finish_reason="length" if text.endswith("ModelNew(") else "stop")
    return script


def agent_cmd(tasks, llm, out, *extra):
    return [KGYM, "agent", "--tasks", tasks, "--base-url", llm.base_url, "--model", "fake", "--out", out,
            "--device", "cpu", "--size", "small", "--num-correct-trials", "2", "--num-perf-trials", "3",
            "--eval-timeout", "120", "--turns", "3", "--samples", "2", "--seed", "0", "--llm-timeout", "1",
            "--max-retries", "3", "--retry-backoff", "0.05", "--no-progress", *extra]


def records(out):
    recs = {}
    with open(os.path.join(out, "trajectories.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            recs[r["key"]] = r
    return recs


def test_inprocess_three_turns_kill_resume_and_grade(tmp_path):
    tasks = tmp_path / "tasks"
    (tasks / "level1").mkdir(parents=True)
    for name in ("relu", "leaky_relu"):
        shutil.copy(os.path.join(ROOT, "tasks/level1", name + ".py"), tasks / "level1")
    out = str(tmp_path / "run")
    hang = threading.Event()
    llm = FakeOpenAI(script_for(hang), task_of=task_of)
    try:
        proc = subprocess.Popen(agent_cmd(str(tasks), llm, out, "--concurrency", "1"), stderr=subprocess.PIPE,
                                text=True)
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None:
            with llm.lock:
                if any(e["task"] == "relu" and e["sample"] == 1 and e["turn"] == 2 for e in llm.log):
                    break
            time.sleep(0.05)
        if proc.poll() is not None or time.time() >= deadline:
            proc.kill()
            pytest.fail("the run did not reach the hanging request: " + proc.stderr.read())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = records(out)
        assert sorted(before) == ["level1/leaky_relu#0", "level1/leaky_relu#1", "level1/relu#0"]
        hang.set()
        with llm.lock:
            llm.log.clear()
            llm.script = script_for(None)
        res = subprocess.run(agent_cmd(str(tasks), llm, out), capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert {(e["task"], e["sample"]) for e in llm.log} == {("relu", 1)}
        recs = records(out)
        assert len(recs) == 4
        for k, v in before.items():
            assert recs[k] == v
    finally:
        hang.set()
        llm.close()

    # Trajectories: every verdict is what the script implies.
    speedups = {}
    for (task, sample), plan in PLAN.items():
        rec = recs[f"level1/{task}#{sample}"]
        assert rec["status"] == "done", rec["turns"][-1].get("error")
        assert len(rec["turns"]) == 3
        for t, (text, correct) in zip(rec["turns"], plan):
            r = t["result"]
            assert (r["correctness"] and not r["decoy_kernel"]) == correct, (task, sample, t["turn"], r["outcome"])
            if correct:
                assert r["outcome"] == "correct" and r["speedup"] > 0 and r["reference_runtime"] > 0
            speedups[(task, sample, t["turn"])] = r["speedup"] if correct else 0.0
        assert len(rec["messages"]) == 7
    r1 = recs["level1/relu#1"]["turns"]
    assert r1[0]["extraction"] == "empty" and "preflight_error" in r1[0]
    assert not r1[1]["result"]["correctness"]  # the Triton solution cannot pass on this machine
    assert r1[2]["llm_retry_errors"][0].startswith("timeout")
    l0 = recs["level1/leaky_relu#0"]["turns"]
    assert l0[0]["extraction"] == "whole" and "preflight_error" in l0[0]
    assert l0[1]["llm_retry_errors"] == ["HTTP 429"]
    l1 = recs["level1/leaky_relu#1"]["turns"]
    assert l1[0]["llm_retry_errors"] == ["HTTP 500"]
    assert l1[1]["finish_reason"] == "length" and not l1[1]["result"]["compiled"]
    assert "Server feedback (status/metrics/errors):" in l1[0]["feedback_message"]
    assert "mismatch" in l1[2]["result"]["outcome_detail"].lower() or l1[2]["result"]["outcome"] == "incorrect"

    # Grade: correctness is fixed by the script; Fast@p follows from the measured speedups.
    subprocess.run([KGYM, "grade", out, "--quiet"], check=True)
    g = json.load(open(os.path.join(out, "grade.json")))["overall"]
    assert [t["correctness_rate"] for t in g["turns"]] == pytest.approx([2 / 4, 1 / 4, 3 / 4])
    assert g["turns"][0]["compilation_rate"] == pytest.approx(2 / 4)  # the empty and prose turns did not compile
    for p in ("1", "1.2", "1.5", "2", "3"):
        for turn in (1, 2, 3):
            want = sum(1 for (tk, s, t), v in speedups.items() if t == turn and v >= float(p)) / 4
            assert g["turns"][turn - 1]["fast_in_all"][p] == pytest.approx(want)
        best = [max([speedups[(tk, s, t)] for t in (1, 2, 3)]) for (tk, s) in PLAN]
        assert g["best_by_turn"][2]["fast_in_all"][p] == pytest.approx(sum(b >= float(p) for b in best) / 4)
    assert g["best_by_turn"][2]["correctness_rate"] == pytest.approx(1.0)
    assert g["hacking_ratio_turns"] == pytest.approx(0.0)
