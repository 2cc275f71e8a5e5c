"""`kgym rl ...` over JSON Lines: the forms users and tests rely on."""
import json
import os
import subprocess
from pathlib import Path

import pytest

KGYM = Path(os.environ.get("KGYM_BIN", Path(__file__).resolve().parents[2] / "build/src/cli/kgym"))
pytestmark = pytest.mark.skipif(not KGYM.exists(), reason=f"kgym binary not built at {KGYM}")


def run(args, rows, expect_rc=0):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    p = subprocess.run([str(KGYM), "rl", *args], input=text, capture_output=True, text=True, timeout=60)
    assert p.returncode == expect_rc, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()], p.stderr


def test_advantages_trloo_from_a_file(tmp_path):
    rows = [
        {"uid": "p", "traj": "a", "turn": 1, "reward": 1.0, "loss_mask": 1},
        {"uid": "p", "traj": "a", "turn": 2, "reward": 0.5, "loss_mask": 1},
        {"uid": "p", "traj": "b", "turn": 1, "reward": 0.0, "loss_mask": 1},
        {"uid": "p", "traj": "b", "turn": 2, "reward": 0.0, "loss_mask": 0},
        {"uid": "p", "traj": "c", "turn": 1, "reward": 0.5, "loss_mask": 1},
        {"uid": "q", "traj": "d", "turn": 1, "reward": 0.7, "loss_mask": 1},
    ]
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, _ = run(["advantages", "--in", str(f), "--estimator", "trloo"], [])
    assert [o["return"] for o in out] == pytest.approx([1.5, 0.5, 0.0, 0.0, 0.5, 0.7])
    # turn 1 of p: G = 1.5, 0, 0.5 -> A = G - mean(others); turn 2: a alone (b is masked) -> A = G
    assert [o["advantage"] for o in out[:5]] == pytest.approx([1.25, 0.5, -1.0, 0.0, -0.25])
    assert out[5]["advantage"] == pytest.approx(0.7)  # group of one
    assert all(o["uid"] == r["uid"] for o, r in zip(out, rows))


def test_advantages_gamma_and_other_estimator_and_void_mask():
    rows = [{"uid": 1, "traj": 1, "turn": 1, "reward": 1.0}, {"uid": 1, "traj": 1, "turn": 2, "reward": 0.0},
            {"uid": 1, "traj": 2, "turn": 1, "reward": 0.0}, {"uid": 1, "traj": 2, "turn": 2, "reward": 2.0}]
    out, _ = run(["advantages", "--in", "-", "--estimator", "grpo", "--gamma", "0.5"], rows)
    assert [o["return"] for o in out] == pytest.approx([1.0, 0.0, 1.0, 2.0])
    assert sum(o["advantage"] for o in out) == pytest.approx(0.0)
    out, _ = run(["advantages", "--mask-void-turns"], rows)
    assert out[1]["loss_mask"] == 0 and out[1]["advantage"] == 0.0


def test_mrs_rows():
    rows = [{"traj": "t", "turn": 1, "logp_train": [-1.0, -2.0], "logp_rollout": [-1.0, -2.0005]},
            {"traj": "t", "turn": 2, "logp_train": [-0.5], "logp_rollout": [-0.5]},
            {"traj": "u", "turn": 1, "logp_train": [-1.0], "logp_rollout": [-1.01]}]
    out, _ = run(["mrs", "--in", "-"], rows)
    assert [o["keep"] for o in out] == [1, 1, 0]
    assert out[0]["ratio"] == pytest.approx(2.718281828459045 ** (0.0005 / 3))
    out, _ = run(["mrs", "--lower", "0.98", "--upper", "1.02", "--level", "turn"], rows)
    assert [o["keep"] for o in out] == [1, 1, 1]
    out, _ = run(["mrs", "--level", "token"], rows)
    assert out[0]["token_keep"] == [1, 1] and out[2]["token_keep"] == [0]


def test_prs_rows_seeded():
    rows = [{"coverage": 0.35, "correct": True}, {"coverage": 0.2, "correct": True},
            {"coverage": 0.0, "correct": False}, {"coverage": 0.9, "correct": 1}]
    out, _ = run(["prs", "--seed", "5"], rows)
    assert [o["keep_prob"] for o in out] == pytest.approx([0.5, 0.0, 1.0, 1.0])
    assert [o["keep"] for o in out[1:]] == [0, 1, 1]
    again, _ = run(["prs", "--seed", "5"], rows)
    assert again == out
    out, _ = run(["prs", "--threshold", "0.1", "--factor", "0"], rows)
    assert [o["keep_prob"] for o in out] == [1.0, 1.0, 1.0, 1.0]


def test_filter_and_reward():
    rows = [{"uid": "x", "traj": 1, "turn": 1, "reward": 1}, {"uid": "x", "traj": 2, "turn": 1, "reward": 1},
            {"uid": "y", "traj": 3, "turn": 1, "reward": 1}, {"uid": "y", "traj": 4, "turn": 1, "reward": 0}]
    out, _ = run(["filter"], rows)
    assert [o["group_keep"] for o in out] == [0, 0, 1, 1]
    res = [{"status": "completed", "compiled": True, "correctness": True, "speedup": 4.0},
           {"status": "failed", "error_message": "compile"}]
    out, _ = run(["reward", "--reward", "calculate_reward_speedup"], res)
    assert [o["reward"] for o in out] == pytest.approx([2.0, 0.0])
    out, _ = run(["reward", "--reward", "like_kernel"], res)
    assert [o["reward"] for o in out] == pytest.approx([1.0, -1.0])


def test_reward_names_are_the_run_parameters_and_the_old_ones_say_so():
    """`kgym rl reward` names its function and its coverage term as every other command does (--reward,
    --reward-coverage); --fn and --no-coverage still work and say their new names."""
    res = [{"status": "completed", "compiled": True, "correctness": True, "speedup": 4.0,
            "metadata": {"custom_kernel_cuda_time_in_profiling_us": 30.0,
                         "total_kernel_run_time_in_profiling_us": 100.0}}]
    with_cov, _ = run(["reward", "--reward", "speedup"], res)
    without, _ = run(["reward", "--reward", "speedup", "--no-reward-coverage"], res)
    assert with_cov[0]["reward"] != without[0]["reward"]  # the term is on by default here, and the flag drops it
    old, err = run(["reward", "--fn", "speedup", "--no-coverage"], res)
    assert old == without
    assert "kgym rl reward: --fn is now --reward" in err
    assert "kgym rl reward: --no-coverage is now --no-reward-coverage" in err


def test_bad_input_names_row_and_field():
    _, err = run(["advantages"], [{"uid": "p", "traj": "a", "turn": 1}], expect_rc=1)
    assert "row 1" in err and "reward" in err
    _, err = run(["advantages", "--estimator", "ppo"], [], expect_rc=2)
    assert "estimator" in err
