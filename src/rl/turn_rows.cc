#include "rl/turn_rows.h"

#include <string>

namespace kgym::rl {

Status ValidateTurnRows(const TurnRows& rows, int64_t num_groups, TurnLayout* layout) {
  TurnLayout out;
  if (rows.size > 0 && (rows.traj == nullptr || rows.turn == nullptr)) {
    return Status::InvalidArgument("turn rows: traj and turn arrays are required");
  }
  const bool have_groups = rows.group != nullptr;
  if (have_groups && num_groups <= 0) {
    int64_t mx = -1;
    for (size_t i = 0; i < rows.size; ++i) mx = rows.group[i] > mx ? rows.group[i] : mx;
    num_groups = mx + 1;
  }
  out.num_groups = have_groups ? num_groups : 0;
  int64_t last_turn = 0;
  int64_t traj_group = -1;
  for (size_t i = 0; i < rows.size; ++i) {
    if (StartsTrajectory(rows, i)) {
      ++out.num_trajectories;
      last_turn = 0;
      traj_group = -1;
    }
    const int64_t t = rows.turn[i];
    if (t <= 0) continue;  // padding
    ++out.num_real_rows;
    if (t <= last_turn) {
      return Status::InvalidArgument("row " + std::to_string(i) + ": turn " + std::to_string(t) +
                                     " does not follow turn " + std::to_string(last_turn) + " of trajectory " +
                                     std::to_string(rows.traj[i]) +
                                     "; rows of a trajectory must be adjacent and in turn order");
    }
    last_turn = t;
    if (t > out.max_turn) out.max_turn = t;
    if (have_groups) {
      const int64_t g = rows.group[i];
      if (g < 0 || g >= num_groups) {
        return Status::InvalidArgument("row " + std::to_string(i) + ": group " + std::to_string(g) +
                                       " is outside [0, " + std::to_string(num_groups) +
                                       "); pass dense group ids");
      }
      if (traj_group >= 0 && g != traj_group) {
        return Status::InvalidArgument("row " + std::to_string(i) + ": trajectory " + std::to_string(rows.traj[i]) +
                                       " changes group from " + std::to_string(traj_group) + " to " +
                                       std::to_string(g));
      }
      traj_group = g;
    }
  }
  if (layout) *layout = out;
  return Status::Ok();
}

}  // namespace kgym::rl
