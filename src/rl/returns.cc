#include "rl/returns.h"

#include <algorithm>
#include <limits>

namespace kgym::rl {

Status MaskVoidTurns(const TurnRows& rows, const double* rewards, uint8_t* loss_mask) {
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  double best_before = -std::numeric_limits<double>::infinity();
  bool seen_real = false;
  for (size_t i = 0; i < rows.size; ++i) {
    if (StartsTrajectory(rows, i)) {
      best_before = -std::numeric_limits<double>::infinity();
      seen_real = false;
    }
    if (rows.turn[i] <= 0) {
      loss_mask[i] = 0;
      continue;
    }
    const double r = rewards[i];
    if (seen_real && best_before > 0.0 && r <= 0.0) loss_mask[i] = 0;
    best_before = std::max(best_before, r);
    seen_real = true;
  }
  return Status::Ok();
}

void detail::ComputeReturnsUnchecked(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask,
                                     double gamma, double* returns) {
  double running = 0.0;
  for (size_t k = rows.size; k-- > 0;) {
    if (k + 1 == rows.size || rows.traj[k + 1] != rows.traj[k]) running = 0.0;  // last row of a trajectory
    if (rows.turn[k] <= 0) {
      returns[k] = 0.0;
      continue;
    }
    const double r = (loss_mask == nullptr || loss_mask[k]) ? rewards[k] : 0.0;
    running = r + gamma * running;
    returns[k] = running;
  }
}

Status ComputeReturns(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                      double* returns) {
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  detail::ComputeReturnsUnchecked(rows, rewards, loss_mask, gamma, returns);
  return Status::Ok();
}

}  // namespace kgym::rl
