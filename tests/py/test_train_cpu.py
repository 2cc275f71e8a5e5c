"""kgym sft and kgym train end to end on the CPU, every process real: the kgym binary drives the learner
(python -m kgym_train, the pure-torch tiny model on Debian's torch), the agent's turn loop and the gym.

- SFT: `kgym data sft` conversations -> `kgym sft` -> the final model's greedy answer graded by kgym's real
  in-process evaluator (CPU, small size): correct.
- RL: a one-prompt bandit whose answers the fake KernelGYM server (agent_fakes.judge) rewards by their markers
  (SPEED=2.5 fast, SPEED=1.0 slow, WRONG): after SFT on all three, TRLOO + PPO through `kgym train` moves the
  policy to the fast answer; metrics, rollouts and checkpoints are written; a second invocation resumes.
- External engine: the weights are pushed after every step to a second learner process standing in for vLLM /
  SGLang (/update_weights_from_disk), which then scores tokens exactly as the trainer's learner does.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from agent_fakes import FakeGym
from train_util import ROOT, TINY, Server, need_learner_packages, resolved_config

need_learner_packages()
pytestmark = pytest.mark.skipif(not os.path.exists(os.environ.get("KGYM_BIN", "")), reason="KGYM_BIN not built")

RELU_REF = os.path.join(ROOT, "tasks", "level1", "relu.py")
RELU_SOLUTION = os.path.join(ROOT, "tasks", "solutions", "level1", "relu_torch.py")
BANDIT_REF = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n" \
             "        return x\n"
# The answers differ from their first word on, so after SFT the choice is one token and the rest follows.
ANSWERS = {"fast": "class ModelNew:  # fused kernel, SPEED=2.5", "slow": "class ModelNew:  # lazy kernel, SPEED=1.0",
           "wrong": "class ModelNew:  # broken kernel, WRONG"}


def run(cmd, timeout=900):
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd[:3])} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    return p


def metrics(path):
    return [json.loads(line) for line in open(path)]


def write_task(path, task_id, ref, prompt):
    with open(path, "w") as f:
        f.write(json.dumps({"task_id": task_id, "name": task_id, "reference_code": ref,
                            "prompt": [{"role": "user", "content": prompt}]}) + "\n")


def test_sft_then_greedy_answer_graded_by_the_real_gym(kgym, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    write_task(tasks, "level1/relu", open(RELU_REF).read(), "Optimize the ReLU model with a custom kernel.")
    sol = tmp_path / "solutions" / "level1"
    sol.mkdir(parents=True)
    (sol / "relu_torch.py").write_text(open(RELU_SOLUTION).read())
    data = tmp_path / "sft.jsonl"
    p = run([kgym, "data", "sft", "--tasks", str(tasks), "--solutions", str(tmp_path / "solutions"), "--kinds",
             "torch", "--repeat", "8", "--out", str(data)])
    assert "8 conversations over 1 tasks" in p.stderr
    out = tmp_path / "sft"
    run([kgym, "sft"] + TINY + [f"data.train_files=[{data}]", f"trainer.out_dir={out}", "data.train_batch_size=8",
                                "data.micro_batch_size_per_gpu=8", "trainer.total_training_steps=120",
                                "optim.lr=3e-3", "optim.lr_scheduler=constant", "optim.warmup_steps_ratio=0",
                                "trainer.save_freq=0", "tokenizer.corpus=[tasks/level1,tasks/solutions/level1]",
                                f"eval.tasks={tasks}", "eval.max_tokens=160", "eval.size=small",
                                "eval.num_perf_trials=3", "gym.device=cpu", "learner.startup_timeout=300"])
    m = metrics(out / "metrics.jsonl")
    assert m[-1]["train/loss"] < 0.1 * m[0]["train/loss"]
    recs = [json.loads(line) for line in open(out / "eval" / "trajectories.jsonl")]
    assert len(recs) == 1
    turn = recs[0]["turns"][0]
    assert turn["code"].strip() == open(RELU_SOLUTION).read().strip()
    assert turn["result"]["correctness"] is True, turn["result"].get("outcome_detail")
    grade = json.load(open(out / "eval" / "grade.json"))
    assert grade["overall"]["final"]["correctness_rate"] == 1.0


@pytest.fixture(scope="module")
def bandit(kgym, tmp_path_factory):
    """One prompt, three known answers, and a policy SFT-ed on all three."""
    d = tmp_path_factory.mktemp("bandit")
    write_task(d / "tasks.jsonl", "bandit", BANDIT_REF, "Pick a kernel for the identity model.")
    (d / "solutions").mkdir()
    for kind, code in ANSWERS.items():
        (d / "solutions" / f"bandit_{kind}.py").write_text(code + "\n")
    run([kgym, "data", "sft", "--tasks", str(d / "tasks.jsonl"), "--solutions", str(d / "solutions"), "--kinds",
         "fast,slow,wrong", "--repeat", "4", "--out", str(d / "sft.jsonl")])
    run([kgym, "sft"] + TINY + [f"data.train_files=[{d / 'sft.jsonl'}]", f"trainer.out_dir={d / 'sft'}",
                                "data.train_batch_size=12", "data.micro_batch_size_per_gpu=12",
                                "trainer.total_training_steps=150", "optim.lr=5e-3", "optim.lr_scheduler=constant",
                                "optim.warmup_steps_ratio=0", "trainer.save_freq=0",
                                f"tokenizer.corpus=[{d / 'solutions'},{d / 'sft.jsonl'}]"])
    gym = FakeGym()
    yield d, gym
    gym.close()


def rl_args(d, gym, out, steps, *extra):
    return TINY + [f"model.path={d / 'sft' / 'final'}", f"data.train_files=[{d / 'tasks.jsonl'}]",
                   f"trainer.out_dir={out}", f"gym.server={gym.url}", "data.train_batch_size=1", "rollout.n=8",
                   "rollout.max_turns=1", "rollout.response_length=48", f"trainer.total_training_steps={steps}",
                   "trainer.save_freq=4", "trainer.test_freq=0", "actor.optim.lr=5e-4",
                   "algorithm.coverage_rs=null", "reward.coverage_reward=false", "rollout.temperature=1.0",
                   f"metrics.known_solutions={d / 'solutions'}", "learner.startup_timeout=300", "gym.size=small"
                   ] + list(extra)


def test_rl_moves_the_policy_to_the_fast_answer_and_resumes(kgym, bandit, tmp_path):
    d, gym = bandit
    out = tmp_path / "rl"
    run([kgym, "train"] + rl_args(d, gym, out, 12))
    m = metrics(out / "metrics.jsonl")
    assert [r["step"] for r in m] == list(range(1, 13))
    for key in ("reward/mean", "adv/abs_mean", "mrs/keep_frac", "mismatch/abs_max", "filter/row_keep_frac",
                "actor/grad_norm", "actor/entropy", "perf/tokens_per_s", "time/generate_s", "time/evaluate_s",
                "rollout/solution/fast", "rollout/correct_rate", "policy/version", "time/logprob_s",
                "time/train_call_s", "time/weight_push_s", "time/step_start_unix"):
        assert key in m[0], key
    fast = [r["rollout/solution/fast"] for r in m]
    # Shares of 8 samples a step: a window of 3 steps (24 samples) has a standard deviation near 0.09 at a true share
    # of 0.75, so it is judged on the last 6 (48 samples, ~0.06); the first 3 steps sit near 1/3 (the SFT mix).
    late = sum(fast[-6:]) / 6
    assert late >= sum(fast[:3]) / 3 + 0.25, fast
    assert late >= 0.65, fast
    # fp32 engine and learner: the rollout's log-probs are the learner's (MRS keeps everything).
    assert max(r["mismatch/abs_max"] for r in m) < 1e-3
    assert min(r["mrs/keep_frac"] for r in m) == 1.0
    rec = [json.loads(line) for line in open(out / "rollouts" / "step_12" / "trajectories.jsonl")]
    assert len(rec) == 8 and "token_ids" not in rec[0]["turns"][0]  # kept as text
    assert (out / "checkpoints" / "step_12" / "kgym_state.json").exists()
    assert gym.posts and all(p["size"] == "small" for p in gym.posts)  # gym.size reaches a gym server

    p = run([kgym, "train"] + rl_args(d, gym, out, 14))
    assert "resuming from" in p.stderr and "step_12" in p.stderr
    assert [r["step"] for r in metrics(out / "metrics.jsonl")][-2:] == [13, 14]


def test_a_response_past_the_models_positions_is_refused_before_training(kgym, bandit, tmp_path):
    d, gym = bandit
    posts = len(gym.posts)
    p = subprocess.run([kgym, "train"] + rl_args(d, gym, tmp_path / "rl", 2, "rollout.response_length=4096"),
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr.lower(), p.stderr[-3000:]
    assert "rollout.response_length is 4096 but the model has 2048 positions" in p.stderr, p.stderr[-3000:]
    assert "set rollout.response_length to 2047 or less" in p.stderr, p.stderr[-3000:]
    assert len(gym.posts) == posts and not (tmp_path / "rl" / "metrics.jsonl").exists()  # nothing rolled out


def test_weights_pushed_to_an_external_engine(kgym, bandit, tmp_path):
    d, gym = bandit
    out = tmp_path / "ext"
    cfg = str(tmp_path / "engine.json")
    resolved_config(kgym, "train", cfg, TINY + [f"model.path={d / 'sft' / 'final'}"])
    engine = Server(cfg, "--model", str(d / "sft" / "final"))
    try:
        assert engine.get("/health")["policy_version"] == 0
        run([kgym, "train"] + rl_args(d, gym, out, 2, "rollout.engine=external",
                                      f"rollout.external_url={engine.url}/v1", "actor.optim.lr=5e-2"))
        assert engine.get("/health")["policy_version"] == 3  # the initial push and one per step
        row = {"prompt_ids": [1, 2, 3], "response_ids": [4, 5, 6, 7]}
        served = engine.post("/kgym/logprobs", {"rows": [row]})["rows"][0]["logprobs"]
        pushed = Server(cfg, "--model", str(out / "weights" / "step_2"))
        try:
            assert pushed.post("/kgym/logprobs", {"rows": [row]})["rows"][0]["logprobs"] == served
        finally:
            pushed.close()
        original = Server(cfg, "--model", str(d / "sft" / "final"))
        try:
            assert original.post("/kgym/logprobs", {"rows": [row]})["rows"][0]["logprobs"] != served
        finally:
            original.close()
    finally:
        engine.close()


def test_rollouts_with_a_skill_library_evolve_it_every_step(kgym, bandit, tmp_path):
    """rollout.skills: daVinci's schemes in the rollouts (the policy is the selection agent) and one evolution
    round per step that flushes the next snapshot. The tiny policy selects and summarises nothing useful; what is
    checked is the wiring: schemes assigned per sample, evolve.json per step, the snapshot step advancing."""
    d, gym = bandit
    lib = tmp_path / "lib"
    seed = tmp_path / "seed.jsonl"
    seed.write_text(json.dumps({"name": "fuse-epilogue", "description": "fuse the elementwise tail into the kernel",
                                "scope": "general", "tags": ["fusion"], "content": "Fuse epilogues."}) + "\n")
    run([kgym, "skills", "add", "--library", str(lib), str(seed)])
    out = tmp_path / "skills"
    run([kgym, "train"] + rl_args(d, gym, out, 2, f"rollout.skills={lib}", "rollout.skill_selections=3",
                                  "rollout.skill_summaries=1", "rollout.n=4"))
    m = metrics(out / "metrics.jsonl")
    assert [r["step"] for r in m] == [1, 2]
    assert m[0]["skills/library_size"] >= 1 and m[1]["skills/snapshot_step"] == m[0]["skills/snapshot_step"] + 1
    recs = [json.loads(line) for line in open(out / "rollouts" / "step_1" / "trajectories.jsonl")]
    assert sorted(r["first_turn"]["scheme"] for r in recs) == [0, 1, 2, 3]
    assert (out / "rollouts" / "step_2" / "evolve.json").exists()


# ---- faults on the trainer's side (src/fault/fault_points.h): each run is killed or misled in the middle of a step and
# must end with the metrics of the uninterrupted run, every step counted once and every rollout rewarded once. The
# gym is the fake KernelGYM server in a process of its own (fake_gym_process.py), so it can be killed mid-step too.
# Generation is one request at a time (rollout.llm_concurrency=1): each request is then sampled alone from its own seed
# (trainer.seed, step, sample, turn), whatever order the trajectories' threads ask in.

FAULT_STEPS = 3


class GymProcess:
    def __init__(self, tmp_path, port=None, delay_s=0.05):
        from server_util import free_port
        self.port = port or free_port()
        self.log = tmp_path / f"gym-posts-{self.port}.jsonl"
        self.delay_s = delay_s
        self.start()

    def start(self):
        here = os.path.dirname(os.path.abspath(__file__))
        self.proc = subprocess.Popen([sys.executable, os.path.join(here, "fake_gym_process.py"), str(self.port),
                                      str(self.log), str(self.delay_s)], stdout=subprocess.PIPE, text=True, cwd=here)
        assert self.proc.stdout.readline().strip() == "ready"

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)

    def posts(self):
        return [json.loads(line)["task_id"] for line in open(self.log)] if self.log.exists() else []

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


def fault_run(kgym, d, gym, out, env=None, timeout=900):
    """`kgym train` for FAULT_STEPS steps, a checkpoint after each; returns the running process."""
    cmd = [kgym, "train"] + rl_args(d, gym, out, FAULT_STEPS, "trainer.save_freq=1", "rollout.llm_concurrency=1",
                                    "rollout.n=6", "trainer.max_learner_restarts=2")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=dict(os.environ, **(env or {})))


def finish(p, timeout=900):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"kgym train failed ({p.returncode}):\n{err[-6000:]}"
    return err


def comparable(rows):
    """The metrics a resumed run must reproduce: all but wall-clock times (time, time/*, *_s) and throughput
    (perf/*)."""
    return [{k: v for k, v in r.items() if not (k == "time" or k.startswith(("time/", "perf/")) or k.endswith("_s"))}
            for r in rows]


def assert_same_metrics(got, want):
    assert [r["step"] for r in got] == list(range(1, FAULT_STEPS + 1)), [r["step"] for r in got]
    for g, w in zip(comparable(got), comparable(want)):
        assert g.keys() == w.keys(), set(g) ^ set(w)
        for k in w:
            assert g[k] == pytest.approx(w[k], rel=1e-6, abs=1e-9), (g["step"], k, g[k], w[k])


@pytest.fixture(scope="module")
def uninterrupted(kgym, bandit, tmp_path_factory):
    d, _ = bandit
    tmp = tmp_path_factory.mktemp("uninterrupted")
    gym = GymProcess(tmp)
    try:
        finish(fault_run(kgym, d, gym, tmp / "rl"))
    finally:
        gym.kill()
    return metrics(tmp / "rl" / "metrics.jsonl"), len(gym.posts())


def check_rollouts_rewarded_once(out):
    for step in range(1, FAULT_STEPS + 1):
        recs = [json.loads(line) for line in open(out / "rollouts" / f"step_{step}" / "trajectories.jsonl")]
        assert len(recs) == 6, (step, len(recs))  # one record per trajectory: none repeated, none lost


@pytest.mark.parametrize("spec", ["learner.request@10:kill", "learner.request@10:garbage", "learner.train_step@2"])
def test_learner_fails_mid_step_and_training_resumes_to_the_same_metrics(kgym, bandit, uninterrupted, tmp_path, spec):
    """The learner is killed as step 2's train request goes out (requests per step: health, health, log-probs,
    train step, metrics, save), answers it with garbage, or dies inside step 2's PPO step after the optimizer moved
    the weights. kgym train restarts it from checkpoint 1, does step 2 again, and ends where the uninterrupted run
    ended."""
    d, _ = bandit
    gym = GymProcess(tmp_path)
    faults = tmp_path / "faults"
    faults.mkdir()
    try:
        err = finish(fault_run(kgym, d, gym, tmp_path / "rl", {"KGYM_FAULTS": spec, "KGYM_FAULTS_DIR": str(faults)}))
    finally:
        gym.kill()
    assert os.listdir(faults) == [spec.split(":")[0]], err[-3000:]
    assert "restarting it (1 of 2)" in err and "resuming from" in err, err[-3000:]
    assert_same_metrics(metrics(tmp_path / "rl" / "metrics.jsonl"), uninterrupted[0])
    check_rollouts_rewarded_once(tmp_path / "rl")


def test_a_step_whose_gradient_is_not_finite_is_skipped_and_the_run_goes_on(kgym, bandit, uninterrupted, tmp_path):
    """Step 2's gradient norm is NaN (fault learner.grad): the learner skips its optimizer step and says so in strict
    JSON. Written as NaN, the reply was taken for garbage and the learner restarted to the same step, again and again.
    Step 1 is the uninterrupted run's; the policy does not move at step 2; nothing is restarted."""
    d, _ = bandit
    gym = GymProcess(tmp_path)
    faults = tmp_path / "faults"
    faults.mkdir()
    try:
        err = finish(fault_run(kgym, d, gym, tmp_path / "rl", {"KGYM_FAULTS": "learner.grad@2",
                                                                "KGYM_FAULTS_DIR": str(faults)}))
    finally:
        gym.kill()
    assert os.listdir(faults) == ["learner.grad@2"], err[-3000:]
    assert "restarting" not in err, err[-3000:]
    m = metrics(tmp_path / "rl" / "metrics.jsonl")
    assert [r["step"] for r in m] == list(range(1, FAULT_STEPS + 1))
    assert comparable(m)[0] == pytest.approx(comparable(uninterrupted[0])[0])
    assert m[1]["actor/grad_norm_nonfinite"] == 1 and m[1]["actor/grad_norm"] is None
    assert "actor/grad_norm_nonfinite" not in m[0] and "actor/grad_norm_nonfinite" not in m[2]
    versions = [r["policy/version"] for r in m]
    assert versions[1] == versions[0] and versions[2] == versions[0] + 1, versions  # step 2 moved nothing


@pytest.mark.parametrize("spec", ["gym.request@8:reset", "gym.request@8:500", "gym.request@8:slow"])
def test_gym_request_fails_and_is_asked_again(kgym, bandit, uninterrupted, tmp_path, spec):
    """A reply of the gym lost on the way (reset, 500, no answer in time): the trainer asks again with the same
    task_id and the run's metrics are the uninterrupted run's."""
    d, _ = bandit
    gym = GymProcess(tmp_path)
    faults = tmp_path / "faults"
    faults.mkdir()
    try:
        finish(fault_run(kgym, d, gym, tmp_path / "rl", {"KGYM_FAULTS": spec, "KGYM_FAULTS_DIR": str(faults)}))
    finally:
        gym.kill()
    assert os.listdir(faults) == ["gym.request@8"]
    posts = gym.posts()
    assert len(posts) == uninterrupted[1] + 1 and len(set(posts)) == len(posts) - 1  # one POST sent twice
    assert_same_metrics(metrics(tmp_path / "rl" / "metrics.jsonl"), uninterrupted[0])
    check_rollouts_rewarded_once(tmp_path / "rl")


def test_gym_killed_mid_step_and_training_goes_on_to_the_same_metrics(kgym, bandit, uninterrupted, tmp_path):
    """The gym process is SIGKILLed while step 2's evaluations are in flight and started again 2 s later on its
    port: the trainer's requests are sent again (the same task_ids) and the run ends with the uninterrupted run's
    metrics."""
    d, _ = bandit
    gym = GymProcess(tmp_path, delay_s=0.3)
    try:
        p = fault_run(kgym, d, gym, tmp_path / "rl")
        deadline = time.time() + 600
        while len(gym.posts()) < 9 and p.poll() is None and time.time() < deadline:  # step 2's third evaluation
            time.sleep(0.05)
        gym.kill()
        time.sleep(2)
        gym.start()
        finish(p)
    finally:
        gym.kill()
    assert_same_metrics(metrics(tmp_path / "rl" / "metrics.jsonl"), uninterrupted[0])
    check_rollouts_rewarded_once(tmp_path / "rl")
