"""bench/train/demo.sh on the CPU as the GPU machine runs it, in several calls: a demo cut after some steps and
resumed gives the same per-step metrics as an uncut one.

The demo's stages (data, sft, grade, rl with its shuffled-reward control) run on the one-prompt bandit of
test_train_cpu.py (three known answers whose fake-gym rewards are fixed by markers, so every number is
deterministic) with the pure-torch tiny policy. The uncut demo is one call with an ample budget. The cut one: a call
with BUDGET_S=1 (the SFT does the steps that fit in a second and stops with a checkpoint: trainer.time_budget_s), a
call that finishes the SFT and its grading (STAGES), a call with BUDGET_S=1 (each RL arm does one step and stops),
and a last call.
Its demo.json and the runs' metrics equal the uncut demo's, step for step.
"""
import json
import os
import subprocess

import pytest

from agent_fakes import FakeGym
from test_train_cpu import ANSWERS, BANDIT_REF, comparable, metrics, write_task
from train_util import ROOT, need_learner_packages

need_learner_packages()
pytestmark = pytest.mark.skipif(not os.path.exists(os.environ.get("KGYM_BIN", "")), reason="KGYM_BIN not built")

SFT_ARGS = ("trainer.total_training_steps=150 optim.lr=5e-3 optim.lr_scheduler=constant optim.warmup_steps_ratio=0 "
            "data.train_batch_size=12 data.batching=padding data.micro_batch_size_per_gpu=12 trainer.save_freq=50 "
            "tokenizer.vocab_size=512 eval.max_tokens=48")
RL_ARGS = ("data.train_batch_size=1 rollout.n=8 rollout.max_turns=1 rollout.response_length=48 "
           "trainer.total_training_steps=3 actor.optim.name=adamw actor.optim.lr=5e-4 actor.optim.clip_grad=1.0 "
           "algorithm.coverage_rs=null reward.coverage_reward=false gym.size=small")


@pytest.fixture(scope="module")
def bandit(tmp_path_factory):
    d = tmp_path_factory.mktemp("demo_bandit")
    write_task(d / "tasks.jsonl", "bandit", BANDIT_REF, "Pick a kernel for the identity model.")
    (d / "solutions").mkdir()
    for kind, code in ANSWERS.items():
        (d / "solutions" / f"bandit_{kind}.py").write_text(code + "\n")
    gym = FakeGym()
    yield d, gym
    gym.close()


def demo(kgym, d, gym, runs, out, budget, stages=None):
    env = dict(os.environ, KGYM=kgym, REHEARSE="1", RUNS=str(runs), OUT=str(out), BUDGET_S=str(budget),
               RESERVE_S="0", MIN_STAGE_S="0", DEMO_TASKS=str(d / "tasks.jsonl"),
               DEMO_SOLUTIONS=str(d / "solutions"), DEMO_KINDS="fast,slow,wrong", DEMO_REPEAT="4", DEMO_SFT_ONLY="",
               DEMO_FAST_KIND="fast", GYM_SERVER=gym.url,
               SFT_ARGS=SFT_ARGS + f" tokenizer.corpus=[{d / 'solutions'},{runs / 'sft.jsonl'}]", RL_ARGS=RL_ARGS)
    if stages:
        env["STAGES"] = stages
    p = subprocess.run(["bash", "bench/train/demo.sh"], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=1800)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout + p.stderr


def per_step(j):
    return {"sft_loss": j["sft"]["loss"], "correct_rate": j["sft"]["correct_rate"],
            **{f"{arm}/{k}": j[arm][k] for arm in ("rl", "control")
               for k in ("steps", "fast_share", "fast_share_all", "reward_mean", "correct_rate", "mrs_keep")}}


def test_a_demo_cut_and_resumed_reaches_the_uncut_demos_metrics(kgym, bandit, tmp_path):
    d, gym = bandit
    whole = tmp_path / "whole"
    log = demo(kgym, d, gym, whole / "runs", whole / "out", 100000)
    assert "demo: complete" in log, log[-3000:]
    want = json.load(open(whole / "out" / "demo.json"))
    assert want["complete"] and want["rl"]["steps"] == 3 and want["control"]["steps"] == 3
    assert want["fast_share_tasks"] == ["bandit"] and len(want["rl"]["fast_share"]) == 3
    assert want["model_params"] > 0 and want["sft"]["correct_rate"] is not None
    for key in ("generate", "gym", "log_probs", "update", "weight_handling", "step"):
        assert want["step_s_by_phase"][key] is not None, key
    assert want["seeds_batch_step_s_estimate"] > 0
    assert want["gpu_required_busy"] is None  # no nvidia-smi here

    cut = tmp_path / "cut"
    runs, out = cut / "runs", cut / "out"
    log = demo(kgym, d, gym, runs, out, 1)
    said = open(runs / "sft_stdout.txt").read() + open(runs / "sft_stderr.txt").read()
    assert "demo: more calls needed" in log and "stopped at step" in said, log[-2000:] + said[-2000:]
    assert 1 <= len(metrics(runs / "sft" / "metrics.jsonl")) < 150  # steps that fit in 1 s after the model's start
    assert not (runs / "sft" / "final").exists()
    log = demo(kgym, d, gym, runs, out, 100000, stages="data sft grade")
    assert (runs / "sft" / "eval" / "grade.json").exists(), log[-3000:]
    log = demo(kgym, d, gym, runs, out, 1)
    assert "demo: more calls needed" in log
    for arm in ("rl", "control"):
        assert [r["step"] for r in metrics(runs / arm / "metrics.jsonl")] == [1], arm
        assert (runs / arm / "checkpoints" / "step_1" / "kgym_state.json").exists(), arm
    log = demo(kgym, d, gym, runs, out, 100000)
    assert "demo: complete" in log, log[-3000:]
    got = json.load(open(out / "demo.json"))
    assert got["complete"] and len(got["calls"]) == 8  # a start and an end line per call
    assert per_step(got) == per_step(want)
    for name in ("sft", "rl", "control"):
        a, b = metrics(runs / name / "metrics.jsonl"), metrics(whole / "runs" / name / "metrics.jsonl")
        assert [r["step"] for r in a] == [r["step"] for r in b], name
        for g, w in zip(comparable(a), comparable(b)):
            assert g.keys() == w.keys(), (name, set(g) ^ set(w))
            for k, v in w.items():
                same = g[k] == pytest.approx(v, rel=1e-6, abs=1e-9) if isinstance(v, float) else g[k] == v
                assert same, (name, g["step"], k, g[k], v)
