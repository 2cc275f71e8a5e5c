// The dual-clip PPO policy loss of the Dr.Kernel recipe, as a reference for learners and tests
// (research/drkernel.md §2.5; verl_patch compute_policy_loss + agg_loss "seq-mean-token-sum").
// Per valid token: ratio = exp(logp - old_logp); L = max(-A·ratio, -A·clip(ratio, 1 - clip_low, 1 + clip_high));
// for A < 0 also L = min(L, -A·clip_ratio_c). Aggregation: sum over the valid tokens of each row, mean over
// rows with at least one valid token, divided by loss_scale_factor (1000 in the recipe). The advantage is one
// value per row (turn-level estimators broadcast it over the row's tokens).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace kgym::rl {

struct PolicyLossOptions {
  double clip_low = 0.2;
  double clip_high = 0.28;
  double clip_ratio_c = 3.0;  // must be > 1
  double loss_scale_factor = 1000.0;
};

struct PolicyLossResult {
  double loss = 0.0;
  double ppo_kl = 0.0;         // token mean of old_logp - logp
  double clip_fraction = 0.0;  // upper + lower (dual counts as lower), token means
  double clip_fraction_lower = 0.0;
  double clip_fraction_upper = 0.0;
  double clip_fraction_dual = 0.0;
  int64_t rows_in_loss = 0;
  int64_t tokens_in_loss = 0;
};

// Tokens in CSR form as in rl/mismatch.h: row i owns [offsets[i], offsets[i+1]); token_mask may be null.
// advantages has one entry per row. token_loss (optional, one entry per token) receives the per-token loss
// (0 for invalid tokens).
Status DualClipPolicyLoss(size_t rows, const int64_t* offsets, const double* logp, const double* old_logp,
                          const uint8_t* token_mask, const double* advantages, const PolicyLossOptions& opt,
                          PolicyLossResult* out, double* token_loss = nullptr);

}  // namespace kgym::rl
