"""The kgym_rl Python module against plain-Python oracles of drkernel.md §2–§3 (pure loops, no shared code)."""
import math
from collections import defaultdict

import numpy as np
import pytest

kgym_rl = pytest.importorskip("kgym_rl", reason="kgym_rl module not built (pybind11 missing)")


def random_batch(rng, prompts=20, n=6, max_turns=3):
    """VERL layout: prompts × n rollouts × max_turns rows, padding first."""
    uid, traj, turn, reward, mask = [], [], [], [], []
    t = 0
    for p in range(prompts):
        for _ in range(n):
            k = int(rng.integers(1, max_turns + 1))
            for _ in range(max_turns - k):
                uid.append(p); traj.append(t); turn.append(-1); reward.append(0.0); mask.append(0)
            for j in range(1, k + 1):
                uid.append(p); traj.append(t); turn.append(j)
                reward.append(float(rng.integers(0, 4)) * 0.5)  # ties on purpose
                mask.append(int(rng.random() < 0.85))
            t += 1
    return (np.array(uid), np.array(traj), np.array(turn), np.array(reward), np.array(mask, dtype=np.uint8))


def oracle_returns(traj, turn, reward, mask, gamma):
    g = [0.0] * len(traj)
    run = 0.0
    for i in reversed(range(len(traj))):
        if i == len(traj) - 1 or traj[i + 1] != traj[i]:
            run = 0.0
        if turn[i] <= 0:
            continue
        run = (reward[i] if mask[i] else 0.0) + gamma * run
        g[i] = run
    return g


def oracle_trloo(uid, turn, g, mask):
    groups = defaultdict(list)
    for i in range(len(g)):
        if turn[i] > 0 and mask[i]:
            groups[(uid[i], turn[i])].append(i)
    a = [0.0] * len(g)
    for idx in groups.values():
        n = len(idx)
        for i in idx:
            a[i] = g[i] if n == 1 else g[i] - sum(g[j] for j in idx if j != i) / (n - 1)
    return a


@pytest.mark.parametrize("gamma", [1.0, 0.7])
def test_returns_and_trloo_match_the_oracle(gamma):
    rng = np.random.default_rng(1)
    uid, traj, turn, reward, mask = random_batch(rng)
    g, a = kgym_rl.advantages(uid, traj, turn, reward, mask, estimator="trloo", gamma=gamma)
    g_ref = oracle_returns(traj, turn, reward, mask, gamma)
    np.testing.assert_allclose(g, g_ref, atol=1e-12)
    np.testing.assert_allclose(a, oracle_trloo(uid, turn, g_ref, mask), atol=1e-9)
    np.testing.assert_allclose(kgym_rl.returns(traj, turn, reward, mask, gamma), g_ref, atol=1e-12)


def test_grpo_sums_to_zero_per_group_and_masked_rows_are_zero():
    rng = np.random.default_rng(2)
    uid, traj, turn, reward, mask = random_batch(rng)
    _, a = kgym_rl.advantages(uid, traj, turn, reward, mask, estimator="grpo")
    valid = (turn > 0) & (mask == 1)
    assert np.all(a[~valid] == 0)
    sums = defaultdict(float)
    sizes = defaultdict(int)
    for i in np.flatnonzero(valid):
        sums[(uid[i], turn[i])] += a[i]
        sizes[(uid[i], turn[i])] += 1
    for key, s in sums.items():
        if sizes[key] > 1:
            assert abs(s) < 1e-9


@pytest.mark.parametrize("name", ["trloo", "grpo", "turn_independent_grpo", "rloo", "erloo", "erloo_norm", "reinforce"])
def test_every_estimator_runs_and_leaves_invalid_rows_at_zero(name):
    rng = np.random.default_rng(3)
    uid, traj, turn, reward, mask = random_batch(rng, prompts=5)
    g, a = kgym_rl.advantages(uid, traj, turn, reward, mask, estimator=name)
    assert g.shape == a.shape == reward.shape
    assert np.all(np.isfinite(a))
    assert np.all(a[(turn <= 0) | (mask == 0)] == 0)


def test_erloo_norm_and_reinforce_match_the_oracle():
    rng = np.random.default_rng(4)
    uid, traj, turn, reward, mask = random_batch(rng, prompts=8)
    g = np.array(oracle_returns(traj, turn, reward, mask, 1.0))
    valid = (turn > 0) & (mask == 1)
    _, a = kgym_rl.advantages(uid, traj, turn, reward, mask, estimator="reinforce")
    gv = g[valid]
    np.testing.assert_allclose(a[valid], (gv - gv.mean()) / (gv.std(ddof=1) + 1e-6), atol=1e-9)
    _, a = kgym_rl.advantages(uid, traj, turn, reward, mask, estimator="erloo_norm")
    for p in np.unique(uid):
        idx = np.flatnonzero(valid & (uid == p))
        for i in idx:
            others = g[[j for j in idx if j != i]]
            if len(idx) == 1:
                expect = g[i] / (1 + 1e-8)
            elif len(idx) == 2:
                expect = (g[i] - others[0]) / (1 + 1e-8)
            else:
                expect = (g[i] - others.mean()) / (others.std(ddof=1) + 1e-8)
            assert a[i] == pytest.approx(expect, abs=1e-7)


def test_void_turn_mask():
    traj = np.array([0, 0, 0, 1, 1])
    turn = np.array([1, 2, 3, 1, 2])
    reward = np.array([0.0, 1.0, 0.0, -1.0, 0.0])
    assert kgym_rl.mask_void_turns(traj, turn, reward).tolist() == [1, 1, 0, 1, 1]


def test_bad_layout_raises_value_error():
    with pytest.raises(ValueError, match="turn order"):
        kgym_rl.advantages(np.array([0, 0]), np.array([0, 0]), np.array([2, 1]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="estimator"):
        kgym_rl.advantages(np.array([0]), np.array([0]), np.array([1]), np.array([1.0]), estimator="ppo")
    with pytest.raises(ValueError, match="entries"):
        kgym_rl.advantages(np.array([0]), np.array([0, 1]), np.array([1, 1]), np.array([1.0, 1.0]))


def test_mrs_geometric_keeps_iff_within_bounds_float32_and_padded():
    rng = np.random.default_rng(5)
    rows, length = 300, 5
    traj = np.repeat(np.arange(rows // 3), 3)
    turn = np.tile([1, 2, 3], rows // 3)
    rollout = rng.normal(-1.0, 0.3, size=(rows, length)).astype(np.float32)
    train = (rollout + rng.normal(0, 0.0015, size=(rows, length))).astype(np.float32)
    mask = (rng.random((rows, length)) < 0.8).astype(np.uint8)
    ratio, keep = kgym_rl.mrs_padded(traj, turn, train, rollout, mask, veto=0)
    lr = (train.astype(np.float64) - rollout.astype(np.float64)) * mask
    for t in np.unique(traj):
        sel = traj == t
        w = math.exp(lr[sel].sum() / max(mask[sel].sum(), 1))
        assert ratio[sel] == pytest.approx(w, rel=1e-12)
        assert set(keep[sel]) == {int(0.999 <= w <= 1.001)}
    # The CSR form gives the same answer.
    offsets = np.arange(rows + 1) * length
    r2, k2 = kgym_rl.mrs(traj, turn, offsets, train.ravel(), rollout.ravel(), mask.ravel(), veto=0)
    np.testing.assert_array_equal(k2, keep)
    # And so do the per-row summaries.
    s, c, m = kgym_rl.summarize_log_ratios(offsets, train.ravel(), rollout.ravel(), mask.ravel())
    r3, k3 = kgym_rl.mrs_from_stats(traj, turn, s, c, m, veto=0)
    np.testing.assert_array_equal(k3, keep)



def test_mrs_padded_bool_mask_no_tokens_and_shape_errors():
    rng = np.random.default_rng(6)
    rows, length = 12, 7
    traj = np.repeat(np.arange(rows // 3), 3)
    turn = np.tile([-1, 1, 2], rows // 3)
    rollout = rng.normal(-1.0, 0.3, size=(rows, length)).astype(np.float32)
    train = (rollout + rng.normal(0, 0.0015, size=(rows, length))).astype(np.float32)
    mask = rng.random((rows, length)) < 0.8
    r_bool, k_bool = kgym_rl.mrs_padded(traj, turn, train, rollout, mask, veto=0)  # bool mask: read as uint8
    r_u8, k_u8 = kgym_rl.mrs_padded(traj, turn, train, rollout, mask.astype(np.uint8), veto=0)
    np.testing.assert_array_equal(r_bool, r_u8)
    np.testing.assert_array_equal(k_bool, k_u8)
    offsets = np.arange(rows + 1) * length
    r_csr, _ = kgym_rl.mrs(traj, turn, offsets, train.ravel(), rollout.ravel(), mask.ravel(), veto=0)
    np.testing.assert_array_equal(r_csr, r_bool)
    empty = np.zeros((rows, 0), dtype=np.float32)
    ratio, keep = kgym_rl.mrs_padded(traj, turn, empty, empty, np.zeros((rows, 0), dtype=bool))
    assert ratio.tolist() == [1.0] * rows and keep.tolist() == [1] * rows
    with pytest.raises(ValueError, match="differ in size"):
        kgym_rl.mrs_padded(traj, turn, train, rollout[:, :-1])
    with pytest.raises(ValueError, match="rows"):
        kgym_rl.mrs_padded(traj[:-3], turn[:-3], train, rollout)

def test_mrs_veto_scope_and_token_level():
    traj, turn = np.array([0, 0]), np.array([1, 2])
    offsets = np.array([0, 1, 3])
    train = np.array([-1.0, -20.0, -1.0])
    rollout = np.array([-1.0, -1.0, -20.0])  # token 2 vetoed, geometric mean 0
    _, keep = kgym_rl.mrs(traj, turn, offsets, train, rollout, lower=0.5, upper=2.0)
    assert keep.tolist() == [1, 0]
    _, keep = kgym_rl.mrs(traj, turn, offsets, train, rollout, lower=0.5, upper=2.0, veto_scope="trajectory")
    assert keep.tolist() == [0, 0]
    tk, rk = kgym_rl.mrs(traj, turn, offsets, train, rollout, level="token", veto=0)
    assert tk.tolist() == [1, 0, 0] and rk.tolist() == [1, 0]


def test_prs_probabilities_and_reproducible_draws():
    cov = np.array([0.1, 0.35, 0.5, 0.0, 0.3449])
    correct = np.array([1, 1, 1, 0, 1], dtype=np.uint8)
    p, keep = kgym_rl.prs(cov, correct, seed=9)
    np.testing.assert_allclose(p, [0.0, 0.5, 1.0, 1.0, 0.4], atol=1e-9)
    u = kgym_rl.prs_uniform(9, len(cov))
    np.testing.assert_array_equal(keep, (u < p).astype(np.uint8))
    p_raw, _ = kgym_rl.prs(cov, correct, round_decimals=-1)
    assert p_raw[4] == pytest.approx(0.449)
    many = np.full(50000, 0.35)
    _, k = kgym_rl.prs(many, np.ones(50000, dtype=np.uint8), seed=3)
    assert abs(k.mean() - 0.5) < 0.02


def test_group_filter_on_last_turn_rewards():
    uid = np.array([0, 0, 0, 1, 1])
    traj = np.array([0, 0, 1, 2, 3])
    turn = np.array([1, 2, 1, 1, 1])
    reward = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    gk, rk = kgym_rl.group_filter(uid, traj, turn, reward)
    assert gk.tolist() == [0, 1] and rk.tolist() == [0, 0, 0, 1, 1]


def test_dual_clip_loss():
    out = kgym_rl.dual_clip_policy_loss(np.array([0, 1, 2]), np.array([0.5, 2.0]), np.zeros(2),
                                        np.array([1.0, -1.0]), loss_scale_factor=1.0)
    assert out["token_loss"].tolist() == pytest.approx([-1.28, 3.0])
    assert out["loss"] == pytest.approx((-1.28 + 3.0) / 2)
    assert out["clip_fraction_dual"] == pytest.approx(0.5)


def test_mixed_batch_advantages():
    out = kgym_rl.mixed_batch_advantages(np.array([0, 0]), np.array([0, 1]), np.array([1, 1]), np.array([1.0, 0.0]),
                                         selection_uid=np.array([0, 0]), selection_reward=np.array([1.0, 0.0]),
                                         summary_group=np.array([0]), summary_reward=np.array([2.0]))
    assert out["policy_advantages"].tolist() == pytest.approx([1.0, -1.0])
    assert out["selection_advantages"].tolist() == pytest.approx([0.3, -0.3])
    assert out["summary_advantages"].tolist() == pytest.approx([1.0])


def test_rewards():
    ok = {"status": "completed", "compiled": True, "correctness": True, "decoy_kernel": False, "speedup": 2.08,
          "metadata": {"custom_kernel_cuda_time_in_profiling_us": 86.15, "total_kernel_run_time_in_profiling_us": 100.0}}
    assert kgym_rl.compute_reward(ok) == pytest.approx(0.5 + 0.5 * 2.08 + 0.5 * 0.8615)
    assert kgym_rl.compute_reward(ok, "calculate_reward_speedup", coverage_enable=False) == pytest.approx(1.54)
    assert kgym_rl.compute_reward(ok, "paper_eq8") == pytest.approx(1 + 2.08 + 0.8615)
    assert kgym_rl.compute_reward(dict(ok, decoy_kernel=True)) == 0.0
    assert kgym_rl.compute_reward(dict(ok, decoy_kernel=True), "like_kernel") == -1.0
    assert kgym_rl.compute_reward({"status": "failed"}, "weighted") == 0.0
    detail = kgym_rl.reward_breakdown(ok)
    assert detail["time_coverage"] == pytest.approx(0.8615) and detail["success"] is True
    with pytest.raises(ValueError):
        kgym_rl.compute_reward(ok, "fastest")
    with pytest.raises(ValueError):
        kgym_rl.compute_reward(ok, coverage_wieght=1.0)
