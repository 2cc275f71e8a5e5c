"""The README's commands (eval, serve, agent, sft, train) as a new user runs them, from a build folder copied
elsewhere: the binary and the runtime files the build stages beside it (build/share/kgym: the Python packages kgym
runs) at another path, no KGYM_* variable, no PYTHONPATH, and a `python3` first on PATH that has no torch (it logs
every call and fails; no command may run it). The source tree stays where it is, for the README's task files;
the copied binary is outside its build folder, so it must use the copies beside it (src/core/runtime_files.h),
which `kgym doctor --json` confirms. Training runs are cut to a step or two with key=value overrides."""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from agent_fakes import FakeOpenAI, Reply
from train_util import ROOT, TINY, need_learner_packages
from user_env import user_env

BUILT = os.environ.get("KGYM_BIN") or os.path.join(ROOT, "build", "src", "cli", "kgym")
pytestmark = pytest.mark.skipif(not os.path.exists(BUILT), reason="kgym not built")
RELU = ["--ref", "tasks/level1/relu.py", "--kernel", "tasks/solutions/level1/relu_torch.py", "--size", "small"]


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """(kgym, env, fake python3's log, the copy's root)."""
    root = tmp_path_factory.mktemp("moved")
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(BUILT))))
    kgym = root / "build" / "src" / "cli" / "kgym"
    kgym.parent.mkdir(parents=True)
    try:
        os.link(BUILT, kgym)  # a second name for the same bytes: what matters is where the binary is
    except OSError:
        shutil.copy2(BUILT, kgym)
    shutil.copytree(os.path.join(build, "share"), root / "build" / "share")
    if os.path.isdir(os.path.join(build, "train-pkgs")):  # third-party wheels (pyarrow, ...): linked, not copied
        os.symlink(os.path.join(build, "train-pkgs"), root / "build" / "train-pkgs")
    env, log = user_env(root)
    return str(kgym), env, log, root


def run(moved, args, timeout=600, **kw):
    kgym, env, log, _ = moved
    p = subprocess.run([kgym] + args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout, **kw)
    assert not log.exists(), "kgym ran the python3 first on PATH: " + log.read_text()
    assert p.returncode == 0, f"kgym {' '.join(args[:2])} failed ({p.returncode}):\n{p.stderr[-4000:]}"
    return p


def test_the_copy_uses_the_files_beside_it_and_debians_python(moved):
    _, _, _, root = moved
    rt = json.loads(run(moved, ["doctor", "--json"]).stdout)["runtime"]
    for pkg in ("kgym_harness", "kgym_train"):
        assert rt[pkg] == str(root / "build" / "share" / "kgym" / "python"), rt
    assert rt["python"] == "/usr/bin/python3"


def test_eval(moved):
    r = json.loads(run(moved, ["eval"] + RELU).stdout)
    assert r["outcome"] == "correct" and r["correctness"] is True, r


def test_serve(moved, tmp_path):
    kgym, env, log, _ = moved
    proc = subprocess.Popen([kgym, "serve", "--gpus", "none", "--port", "0", "--store", str(tmp_path / "s.db")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        m = re.search(r"listening on (http://[\d.]+:\d+)", proc.stdout.readline())
        assert m, "kgym serve did not start"
        body = {"task_id": "readme-serve", "reference_code": open(os.path.join(ROOT, RELU[1])).read(),
                "kernel_code": open(os.path.join(ROOT, RELU[3])).read(), "num_perf_trials": 5, "timeout": 120,
                "size": "small"}
        req = urllib.request.Request(m.group(1) + "/evaluate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()
        deadline = time.time() + 180
        while time.time() < deadline:
            with urllib.request.urlopen(m.group(1) + "/results/readme-serve", timeout=30) as r:
                res = json.load(r)
            if res.get("status") in ("completed", "failed", "timeout"):
                break
            time.sleep(0.5)
        assert res["status"] == "completed" and res["correctness"] is True, res
    finally:
        proc.terminate()
        proc.wait(30)
    assert not log.exists(), log.read_text()


def test_agent(moved, tmp_path):
    answer = "```python\n" + open(os.path.join(ROOT, RELU[3])).read() + "```\n"
    llm = FakeOpenAI(lambda task, sample, turn, attempt, request: Reply(content=answer))
    try:
        out = tmp_path / "run"
        run(moved, ["agent", "--tasks", "tasks/level1/relu.py", "--base-url", llm.base_url, "--model", "m", "--out",
                    str(out), "--samples", "1", "--turns", "1", "--device", "cpu", "--size", "small",
                    "--num-perf-trials", "5", "--no-progress"])
    finally:
        llm.close()
    rec = json.loads(open(out / "trajectories.jsonl").readline())
    assert rec["turns"][0]["result"]["correctness"] is True, rec["turns"][0]


def test_sft_then_train(moved, tmp_path):
    need_learner_packages()
    data = tmp_path / "sft.jsonl"
    run(moved, ["data", "sft", "--tasks", "tasks", "--solutions", "tasks/solutions", "--kinds", "triton,lazy",
                "--only", "level1/relu", "--out", str(data)])
    sft = tmp_path / "sft"
    run(moved, ["sft", "--config", "examples/train/sft_tiny_qwen3.yaml"] + TINY +
        [f"data.train_files=[{data}]", f"trainer.out_dir={sft}", "trainer.total_training_steps=1",
         "data.train_batch_size=1", "data.max_length=2048", "data.truncation=left", "eval.only=[level1/relu]",
         "eval.max_tokens=16",
         "gym.device=cpu"])
    assert json.load(open(sft / "eval" / "grade.json")), "the graded SFT model wrote no grade"
    rl = tmp_path / "rl"
    run(moved, ["train", "--config", "examples/train/rl_fast_vs_lazy.yaml"] + TINY +
        [f"model.path={sft / 'final'}", f"trainer.out_dir={rl}", "trainer.total_training_steps=1",
         "data.only=[level1/relu]", "data.train_batch_size=1", "rollout.n=2", "rollout.response_length=16",
         "gym.device=cpu", "gym.size=small", "gym.num_perf_trials=5", "metrics.known_solutions=null",
         "actor.max_seq_length=2048"])
    steps = [json.loads(line) for line in open(rl / "metrics.jsonl")]
    assert steps and steps[-1]["step"] == 1, steps
