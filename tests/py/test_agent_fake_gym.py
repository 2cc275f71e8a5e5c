"""Full 3-turn `kgym agent` runs against a scripted OpenAI server and a scripted KernelGYM server
(--server), with malformed responses, HTTP 429/500/timeouts, a mid-run kill and a resume; the
trajectories and the `kgym grade` table are checked against hand-computed expectations."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from agent_fakes import FakeGym, FakeOpenAI, Reply, kernel_response

KGYM = os.environ.get("KGYM_BIN", "")
pytestmark = pytest.mark.skipif(not (KGYM and os.path.exists(KGYM)), reason="KGYM_BIN not built")

TASKS = {"level1/1_Alpha": "Alpha", "level1/2_Beta": "Beta", "level2/3_Gamma": "Gamma"}

# (task, sample) -> per turn: what the model answers. Speedups are chosen so every Fast@p threshold
# sits on a boundary somewhere (1.2 and 3.0 exactly).
PLAN = {
    ("Alpha", 0): ["prose", "WRONG", "SPEED=2.0"],
    ("Alpha", 1): ["SPEED=1.3", "truncated", "SPEED=1.0"],
    ("Beta", 0): ["empty", "SPEED=1.5", "SPEED=1.5"],
    ("Beta", 1): ["DECOY", "SPEED=3.0", "SPEED=0.8"],
    ("Gamma", 0): ["SPEED=1.2", "SPEED=1.2", "SPEED=2.5"],
    ("Gamma", 1): ["WRONG", "WRONG", "WRONG"],
}
# Transport faults injected on the first attempt of some requests.
FAULTS = {("Beta", 0, 2): "429", ("Beta", 0, 3): "500", ("Beta", 1, 1): "timeout", ("Gamma", 1, 1): "badjson"}


def make_tasks(root):
    for tid, name in TASKS.items():
        path = os.path.join(root, tid + ".py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f"# TASK={name}\nimport torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                    f"        return x\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
                    f"def get_init_inputs():\n    return []\n")


def script_for(hang=None):
    def script(task, sample, turn, attempt, body):
        fault = FAULTS.get((task, sample, turn)) if attempt == 0 else None
        if fault == "429":
            return Reply(status=429, raw_body='{"error": "rate limited"}')
        if fault == "500":
            return Reply(status=500, raw_body="internal error")
        if fault == "timeout":
            return Reply(content=kernel_response("SPEED=9.9"), delay_s=2.5)
        if fault == "badjson":
            return Reply(raw_body='{"choices": [')
        if hang is not None and (task, sample, turn) == ("Gamma", 0, 2):
            return Reply(content="never", hang=hang)
        what = PLAN[(task, sample)][turn - 1]
        if what == "prose":
            return Reply(content="I think fusing is best, but I will not write code today.")
        if what == "empty":
            return Reply(content="")
        if what == "truncated":
            return Reply(content="```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forw",
                         finish_reason="length")
        return Reply(content=kernel_response(what))
    return script


def agent_cmd(tasks, llm, gym, out, *extra):
    return [KGYM, "agent", "--tasks", tasks, "--base-url", llm.base_url, "--model", "fake-model",
            "--server", gym.url, "--out", out, "--turns", "3", "--samples", "2", "--seed", "0",
            "--llm-timeout", "1", "--max-retries", "3", "--retry-backoff", "0.05", "--no-progress", *extra]


def read_records(out):
    recs = {}
    with open(os.path.join(out, "trajectories.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            recs[r["key"]] = r
    return recs


def expected_reward(marker):
    if marker.startswith("SPEED="):
        return 0.5 + 0.5 * min(float(marker[6:]), 3.0)
    return 0.0


def check_records(recs, rewards_available):
    assert len(recs) == 6
    for (name, sample), plan in PLAN.items():
        tid = next(t for t, n in TASKS.items() if n == name)
        rec = recs[f"{tid}#{sample}"]
        assert rec["status"] == "done"
        assert [t["turn"] for t in rec["turns"]] == [1, 2, 3]
        assert rec["level"] == tid[5]
        for turn, what in zip(rec["turns"], plan):
            res = turn["result"]
            if what in ("prose", "empty"):
                assert "preflight_error" in turn and res["status"] == "failed" and not res["compiled"]
                assert turn["extraction"] == ("whole" if what == "prose" else "empty")
            elif what == "truncated":
                assert turn["finish_reason"] == "length" and not res["compiled"]
            elif what == "DECOY":
                assert res["decoy_kernel"] and "Reward hacking" in turn["feedback_message"]
            elif what == "WRONG":
                assert res["compiled"] and not res["correctness"]
            else:
                assert res["correctness"] and res["speedup"] == pytest.approx(float(what[6:]))
                assert turn["extraction"] == "fenced"  # the SPEED=99 inside <think> was ignored
            if rewards_available:
                assert turn["reward"] == pytest.approx(expected_reward(what))
            assert turn["feedback_message"].startswith("Now you have received the server feedback")
            assert turn["usage"]["completion_tokens"] == 20
        # Full history: initial prompt + 3 x (assistant, feedback).
        assert len(rec["messages"]) == 7
        assert rec["messages"][0]["content"].startswith("You write custom Triton kernels")
    beta1 = recs["level1/2_Beta#1"]["turns"][0]
    assert beta1["llm_attempts"] == 2 and beta1["llm_retry_errors"][0].startswith("timeout")
    beta0 = recs["level1/2_Beta#0"]["turns"]
    assert beta0[1]["llm_retry_errors"] == ["HTTP 429"] and beta0[2]["llm_retry_errors"] == ["HTTP 500"]
    assert "malformed" in recs["level2/3_Gamma#1"]["turns"][0]["llm_retry_errors"][0]


def check_grade(out, rewards_available):
    md = subprocess.run([KGYM, "grade", out], capture_output=True, text=True, check=True).stdout
    g = json.load(open(os.path.join(out, "grade.json")))
    s = g["overall"]
    assert s["num_samples"] == 6 and s["num_tasks"] == 3 and s["max_turn"] == 3
    t1, t2, t3 = s["turns"]
    # Turn 1: prose, 1.3, empty, decoy, 1.2, wrong.
    assert t1["n"] == 6
    assert t1["compilation_rate"] == pytest.approx(4 / 6)
    assert t1["correctness_rate"] == pytest.approx(2 / 6)
    assert t1["hacking_rate"] == pytest.approx(1 / 6)
    assert [t1["fast_in_all"][p] for p in ("1", "1.2", "1.5")] == pytest.approx([2 / 6, 2 / 6, 0])
    # Turn 2: wrong, truncated, 1.5, 3.0, 1.2, wrong.
    assert t2["compilation_rate"] == pytest.approx(5 / 6)
    assert [t2["fast_in_all"][p] for p in ("1", "1.2", "1.5", "2", "3")] == pytest.approx(
        [3 / 6, 3 / 6, 2 / 6, 1 / 6, 1 / 6])
    # Turn 3: 2.0, 1.0, 1.5, 0.8, 2.5, wrong.
    assert t3["correctness_rate"] == pytest.approx(5 / 6)
    assert [t3["fast_in_all"][p] for p in ("1", "1.2", "1.5", "2", "3")] == pytest.approx(
        [4 / 6, 3 / 6, 3 / 6, 2 / 6, 0])
    # Best of turns 1..3: 2.0, 1.3, 1.5, 3.0, 2.5, none.
    b3 = s["best_by_turn"][2]
    assert [b3["fast_in_all"][p] for p in ("1", "1.2", "1.5", "2", "3")] == pytest.approx(
        [5 / 6, 5 / 6, 4 / 6, 3 / 6, 1 / 6])
    assert s["hacking_ratio_samples"] == pytest.approx(1 / 6)
    assert g["levels"]["2"]["num_samples"] == 2
    assert g["levels"]["2"]["turns"][2]["fast_in_all"]["2"] == pytest.approx(0.5)
    if rewards_available:
        # Final rewards: 1.5, 1.0, 1.25, 0.9, 1.75, 0 -> solved (>= 0.99): Alpha 2/2, Beta 1/2, Gamma 1/2.
        assert s["pass_at_k"]["1"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert "| 3 | 6 | 100.0 | 83.3 | 66.7 | 50.0 | 50.0 | 33.3 | 0.0 |" in md
    html = open(os.path.join(out, "grade.html")).read()
    # The run view as one self-contained page: Chart.js, the page's code and the grade inline, nothing fetched.
    assert 'id="kgym-report"' in html and "Chart.js v3" in html and " src=" not in html


def test_three_turn_run_kill_and_resume(tmp_path):
    tasks = str(tmp_path / "tasks")
    make_tasks(tasks)
    out = str(tmp_path / "run")
    hang = threading.Event()
    llm = FakeOpenAI(script_for(hang))
    gym = FakeGym(fail_first_posts=1)
    try:
        env = dict(os.environ, KGYM_TEST_KEY="sk-secret")
        # Phase 1: one trajectory at a time; the request for Gamma#0 turn 2 hangs, and we kill the run there.
        proc = subprocess.Popen(agent_cmd(tasks, llm, gym, out, "--concurrency", "1", "--api-key-env", "KGYM_TEST_KEY"),
                                env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            with llm.lock:
                if any(e["task"] == "Gamma" and e["turn"] == 2 for e in llm.log):
                    break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        if proc.poll() is not None or time.time() >= deadline:
            proc.kill()
            pytest.fail("the run never reached Gamma#0 turn 2: " + proc.stderr.read())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = read_records(out)
        assert sorted(before) == ["level1/1_Alpha#0", "level1/1_Alpha#1", "level1/2_Beta#0", "level1/2_Beta#1"]
        assert all(e["auth"] == "Bearer sk-secret" for e in llm.log)
        # The torn tail of a write interrupted by the kill is cut off on resume.
        with open(os.path.join(out, "trajectories.jsonl"), "a") as f:
            f.write('{"key": "level2/3_Gamma#0", "turns": [')
        hang.set()
        with llm.lock:
            llm.log.clear()
            llm.script = script_for(None)
        # Phase 2: resume; only the Gamma trajectories run.
        res = subprocess.run(agent_cmd(tasks, llm, gym, out, "--concurrency", "4"), capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert "4 already done" in res.stderr
        assert {e["task"] for e in llm.log} == {"Gamma"}
        recs = read_records(out)
        for k, v in before.items():
            assert recs[k] == v  # finished trajectories are never redone
        rewards_available = not recs["level1/1_Alpha#0"]["turns"][0]["reward_summary"].get("reward_unavailable")
        check_records(recs, rewards_available)
        # The gym saw the Dr.Kernel client's payload; the first POST got a 503 and was retried.
        p = gym.posts[0]
        assert p["backend"] == "triton" and p["verbose_errors"] and p["enable_profiling"] and p["is_valid"]
        assert p["num_correct_trials"] == 5 and p["num_perf_trials"] == 10
        assert "size" not in p  # kgym's size hint travels only when set: KernelGYM's payload has none
        assert gym.posts[0]["task_id"] == gym.posts[1]["task_id"]
        # Preflight failures (prose, empty) never reach the gym: 18 turns - 2, + 1 retried POST, + Gamma#0
        # turn 1 evaluated before the kill and again after the resume.
        assert len(gym.posts) == 18
        check_grade(out, rewards_available)
        # A resume with different settings is refused.
        res = subprocess.run(agent_cmd(tasks, llm, gym, out)[:-1] + ["--turns", "5", "--no-progress"],
                             capture_output=True, text=True)
        assert res.returncode != 0 and "turns" in res.stderr
    finally:
        hang.set()
        llm.close()
        gym.close()
