// daVinci-kernel's advantages for one mixed batch of policy, selection and summary rows of a single shared
// model (research/davinci.md §6.3; skill_adv.compute_mixed_batch_advantages):
//  - policy rows: TRLOO with group (original task uid, turn) over all rollouts of the task across all skill
//    schemes; then, with cross_scheme_norm (the script's adv_cross_scheme = True), every policy advantage of a
//    task is divided by (mean |A| over the task's valid tokens + 1e-8). token_count gives each row's number of
//    valid response tokens (null: every row weighs 1);
//  - selection rows (one per non-null scheme, group = task): A = (R - mean of the others) · selection_weight;
//    a single-row group gets R · selection_weight;
//  - summary rows (group = the task's summary group): the same with summary_weight.
// No std normalisation anywhere. Any of the three parts may be empty.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

struct PolicyPart {
  TurnRows rows;  // group = task uid (dense), traj, turn
  const double* rewards = nullptr;
  const uint8_t* loss_mask = nullptr;
  const int64_t* token_count = nullptr;
  int64_t num_groups = 0;  // <= 0: inferred
};

struct OutcomePart {  // selection or summary rows: one scalar reward each
  size_t size = 0;
  const int64_t* group = nullptr;  // dense ids
  const double* reward = nullptr;
};

struct MixedBatchOptions {
  double gamma = 1.0;
  bool cross_scheme_norm = true;  // the released scripts; the yaml default is false
  double selection_weight = 0.3;
  double summary_weight = 0.5;
};

// Outputs: policy_returns / policy_adv (policy.rows.size), selection_adv (selection.size), summary_adv
// (summary.size).
Status MixedBatchAdvantages(const PolicyPart& policy, const OutcomePart& selection, const OutcomePart& summary,
                            const MixedBatchOptions& opt, double* policy_returns, double* policy_adv,
                            double* selection_adv, double* summary_adv);

// Leave-one-out within groups of scalar outcomes: A = R - mean of the others (n == 1: A = R), times weight.
Status WeightedLeaveOneOut(const OutcomePart& part, double weight, double* adv);

}  // namespace kgym::rl
