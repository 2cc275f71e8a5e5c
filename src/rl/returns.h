// Turn rewards before advantages (research/drkernel.md §2.1, §3.3): the void-turn loss mask and the
// reward-to-go returns. Rows follow the layout of rl/turn_rows.h; `loss_mask` may be null (all rows 1).
#pragma once

#include <cstdint>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

// Dr.Kernel's mask_void_turn rule, AND-ed into loss_mask (in place, rows.size entries): the first real turn
// of a trajectory keeps its mask; a later turn with reward <= 0 after any earlier turn of the same
// trajectory had reward > 0 gets loss_mask 0. Padding rows get 0. Uses the raw rewards.
Status MaskVoidTurns(const TurnRows& rows, const double* rewards, uint8_t* loss_mask);

// Reward-to-go G_t = r_t + gamma · G_{t+1} over the real turns of each trajectory, where the reward of a
// row with loss_mask 0 counts as 0 (apply_loss_mask_to_rewards runs before the returns in the code).
// Padding rows get return 0 and do not advance the discount. Loss-masked real rows get their return too
// (it is what flows to the earlier turns); estimators give them advantage 0.
Status ComputeReturns(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                      double* returns);

namespace detail {
// ComputeReturns fused with ValidateTurnRows (one pass over the rows instead of two), for the estimators.
Status ReturnsAndLayout(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                        int64_t num_groups, double* returns, TurnLayout* layout);
}  // namespace detail

}  // namespace kgym::rl
