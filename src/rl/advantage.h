// Advantage estimators over turn rows (research/drkernel.md §2; rows as in rl/turn_rows.h).
//
// A row is *valid* when it is a real turn (turn > 0) with loss_mask 1; only valid rows join groups and only
// they get a non-zero advantage. Returns G are computed first (rl/returns.h: masked rewards count 0).
//  trloo (default, Dr.Kernel): group (uid, turn); n > 1: A = n/(n-1)·(G - mean); n == 1: A = G.
//  grpo: group (uid, turn); A = G - mean, no std division; n == 1: baseline 0, A = G.
//  turn_independent_grpo: raw turn rewards r instead of returns, group uid (all turns pooled); A = r - mean;
//      n == 1: A = r.
//  rloo: trajectory-level RLOO of the code's single-turn path (adv_by_last_turn): the outcome of a rollout
//      is the reward of its last real turn; leave-one-out over the rollouts of the uid (n == 1: baseline 0);
//      every valid turn of the rollout gets that advantage.
//  erloo: RLOO on G grouped by uid only (all turns pooled): A = n/(n-1)·(G - mean); n == 1: A = G.
//  erloo_norm: group uid; n == 1: A = G / (1 + 1e-8); n == 2: A = (G - other) / (1 + 1e-8);
//      else A = (G - loo_mean) / (loo_std + 1e-8) with the unbiased std of the other n - 1 returns.
//  reinforce: over all valid rows of the batch, A = (G - mean) / (std + 1e-6), std unbiased; one valid row:
//      mean 0, std 1. No valid row: all zeros.
// Returns are written for every row (0 for padding); advantages are 0 for invalid rows.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

enum class Estimator { kTrloo, kGrpo, kTurnIndependentGrpo, kRloo, kErloo, kErlooNorm, kReinforce };

// "trloo" | "grpo" | "turn_independent_grpo" | "rloo" | "erloo" | "erloo_norm" | "reinforce".
Status ParseEstimator(const std::string& name, Estimator* out);
const char* EstimatorName(Estimator e);

struct AdvantageOptions {
  Estimator estimator = Estimator::kTrloo;
  double gamma = 1.0;      // Dr.Kernel fixes gamma = 1
  int64_t num_groups = 0;  // <= 0: max(group) + 1
};

// rows.group is required. loss_mask may be null (all 1). returns and advantages have rows.size entries.
Status ComputeAdvantages(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask,
                         const AdvantageOptions& opt, double* returns, double* advantages);

}  // namespace kgym::rl
