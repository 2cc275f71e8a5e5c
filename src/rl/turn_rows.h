// The flat layout every estimator and filter in kgym::rl works on: one row per turn of one rollout, as
// parallel arrays (struct of arrays), so a trainer can hand over NumPy/PyTorch buffers without copying.
//
// Layout contract (checked by ValidateTurnRows, O(rows)):
//  - group[i]: the prompt group (Dr.Kernel's `uid`: all rollouts of one prompt), a dense id in [0, num_groups).
//  - traj[i]:  the rollout. A trajectory is a maximal run of consecutive rows with the same traj id; so rows
//              of one rollout must be adjacent (an id that reappears later starts a new trajectory).
//  - turn[i]:  the 1-based turn number; turn <= 0 marks a padding row (VERL's turn_index -1). Within a
//              trajectory the real turns strictly increase; padding rows may sit anywhere (VERL puts them
//              first) and are ignored by every computation. All real rows of a trajectory share one group.
// Groups need not be contiguous: rows of many prompts may interleave in any order.
// Dr.Kernel's VERL batch (prompts × n × max_turns rows, padding first) satisfies this as it is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace kgym::rl {

struct TurnRows {
  size_t size = 0;
  const int64_t* group = nullptr;  // may be null for functions that need no groups (returns, MRS, PRS)
  const int64_t* traj = nullptr;
  const int64_t* turn = nullptr;
};

struct TurnLayout {
  int64_t num_groups = 0;  // as given, or max(group) + 1 when inferred
  int64_t max_turn = 0;    // largest real turn number
  int64_t num_trajectories = 0;
  int64_t num_real_rows = 0;
};

// Checks the contract above. num_groups <= 0 infers it as max(group) + 1. A null `group` skips the group
// checks (layout->num_groups = 0). Errors name the first offending row.
Status ValidateTurnRows(const TurnRows& rows, int64_t num_groups, TurnLayout* layout);

// True when row i starts a new trajectory (i == 0 or traj differs from the previous row).
inline bool StartsTrajectory(const TurnRows& rows, size_t i) { return i == 0 || rows.traj[i] != rows.traj[i - 1]; }

}  // namespace kgym::rl
