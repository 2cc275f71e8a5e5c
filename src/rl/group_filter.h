// The zero-variance group filter (research/drkernel.md §3.3; DAPO-style, trainer.rejection_sample with
// is_get_last_turn): per prompt group, the rewards of the last real turn of each of its trajectories
// (rewards of loss-masked rows count 0); a group with more than one such reward is dropped when their
// unbiased std is < min_std (1e-3). Groups with fewer than min_group_size rewards are dropped too (the code's
// selection stage uses n//2 + 1; the default 1 keeps single-rollout groups, which have no variance test).
// The buffering / skip-the-step logic of the code is the trainer's business, not this function's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

struct GroupFilterOptions {
  double min_std = 1e-3;
  int64_t min_group_size = 1;
  bool last_turn_only = true;  // false: every valid row of the group (is_get_last_turn = false)
  int64_t num_groups = 0;      // <= 0: max(group) + 1
};

// group_keep receives num_groups flags (a group with no rows is dropped); row_keep (rows.size entries) is the
// flag of each row's group. loss_mask may be null.
Status ZeroVarianceGroupFilter(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask,
                               const GroupFilterOptions& opt, std::vector<uint8_t>* group_keep, uint8_t* row_keep);

}  // namespace kgym::rl
