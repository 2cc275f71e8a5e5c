#!/usr/bin/env python3
"""A trainer step's RL bookkeeping through kgym_rl, in the order Dr.Kernel's recipe runs it
(research/drkernel.md §3.3): void-turn mask -> MRS -> PRS -> zero-variance group filter -> TRLOO.

Run: PYTHONPATH=build/python /usr/bin/python3 examples/rl_from_python.py
"""
import numpy as np

import kgym_rl

rng = np.random.default_rng(0)
prompts, n, turns, length = 4, 16, 3, 32

# The VERL layout: prompts x n rollouts x max_turns rows, padding rows first (turn -1).
uid_str = np.repeat([f"task-{p}" for p in range(prompts)], n * turns)
uid = np.unique(uid_str, return_inverse=True)[1].astype(np.int64)  # dense group ids
traj = np.repeat(np.arange(prompts * n), turns)
k = rng.integers(1, turns + 1, size=prompts * n)
col = np.tile(np.arange(turns), prompts * n)
turn = np.where(col >= np.repeat(turns - k, turns), col - np.repeat(turns - k, turns) + 1, -1)

# One KernelGYM result per real turn -> Dr.Kernel's reward (0.5 C + 0.5 min(s, 3) + 0.5 C coverage).
rewards, coverage, correct = np.zeros(len(turn)), np.zeros(len(turn)), np.zeros(len(turn), np.uint8)
for i in np.flatnonzero(turn > 0):
    ok = bool(rng.random() < 0.5)
    result = {"status": "completed", "compiled": True, "correctness": ok, "decoy_kernel": False,
              "speedup": float(rng.lognormal(0, 0.3)) if ok else 0.0,
              "metadata": {"custom_kernel_cuda_time_in_profiling_us": float(rng.random() * 100),
                           "total_kernel_run_time_in_profiling_us": 100.0}}
    detail = kgym_rl.reward_breakdown(result, "calculate_reward_speedup")
    rewards[i], coverage[i], correct[i] = detail["reward"], round(detail["time_coverage"], 2), ok

loss_mask = kgym_rl.mask_void_turns(traj, turn, rewards, (turn > 0).astype(np.uint8))

# Token log-probs of the trainer (FSDP) and of the rollout engine (vLLM), padded (rows, length).
logp_rollout = rng.normal(-1.0, 0.5, size=(len(turn), length)).astype(np.float32)
logp_train = logp_rollout + rng.normal(0, 0.0005, size=logp_rollout.shape).astype(np.float32)
response_mask = np.repeat(loss_mask[:, None], length, axis=1)
ratio, mrs_keep = kgym_rl.mrs_padded(traj, turn, logp_train, logp_rollout, response_mask)
keep_prob, prs_keep = kgym_rl.prs(coverage, correct, seed=1234, valid=mrs_keep & loss_mask)
group_keep, row_keep = kgym_rl.group_filter(uid, traj, turn, rewards, loss_mask)

# Rejected turns stay in the TRLOO baselines; only loss-masked turns leave the groups.
returns, advantages = kgym_rl.advantages(uid, traj, turn, rewards, loss_mask, estimator="trloo", gamma=1.0)
in_loss = (loss_mask & mrs_keep & prs_keep & row_keep).astype(bool)

print(f"rows {len(turn)}, real turns {(turn > 0).sum()}, loss-masked {int((turn > 0).sum() - loss_mask.sum())}")
print(f"MRS kept {mrs_keep[turn > 0].mean():.2f} of real turns, PRS kept {prs_keep[loss_mask == 1].mean():.2f}, "
      f"groups kept {group_keep.sum()}/{len(group_keep)}")
print(f"rows in the loss {in_loss.sum()}, mean |A| there {np.abs(advantages[in_loss]).mean():.3f}")
loss = kgym_rl.dual_clip_policy_loss(np.arange(len(turn) + 1) * length, logp_train.ravel().astype(np.float64),
                                     logp_rollout.ravel().astype(np.float64), advantages,
                                     token_mask=(response_mask * in_loss[:, None]).ravel().astype(np.uint8))
print(f"dual-clip loss (seq-mean-token-sum / 1000): {loss['loss']:.6f}, clip fraction {loss['clip_fraction']:.4f}")
