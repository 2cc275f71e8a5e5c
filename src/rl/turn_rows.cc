#include "rl/turn_rows.h"

#include <algorithm>
#include <string>

namespace kgym::rl {
namespace {

// The contract checked row by row, with the message that names the first offending row. Slow (branchy);
// runs only after the fast pass below has seen a violation.
Status FirstViolation(const TurnRows& rows, int64_t num_groups) {
  const bool have_groups = rows.group != nullptr;
  int64_t last_turn = 0;
  int64_t traj_group = -1;
  for (size_t i = 0; i < rows.size; ++i) {
    if (StartsTrajectory(rows, i)) {
      last_turn = 0;
      traj_group = -1;
    }
    const int64_t t = rows.turn[i];
    if (t <= 0) continue;  // padding
    if (t <= last_turn) {
      return Status::InvalidArgument("row " + std::to_string(i) + ": turn " + std::to_string(t) +
                                     " does not follow turn " + std::to_string(last_turn) + " of trajectory " +
                                     std::to_string(rows.traj[i]) +
                                     "; rows of a trajectory must be adjacent and in turn order");
    }
    last_turn = t;
    if (have_groups) {
      const int64_t g = rows.group[i];
      if (g < 0 || g >= num_groups) {
        return Status::InvalidArgument("row " + std::to_string(i) + ": group " + std::to_string(g) +
                                       " is outside [0, " + std::to_string(num_groups) + "); pass dense group ids");
      }
      if (traj_group >= 0 && g != traj_group) {
        return Status::InvalidArgument("row " + std::to_string(i) + ": trajectory " + std::to_string(rows.traj[i]) +
                                       " changes group from " + std::to_string(traj_group) + " to " +
                                       std::to_string(g));
      }
      traj_group = g;
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateTurnRows(const TurnRows& rows, int64_t num_groups, TurnLayout* layout) {
  TurnLayout out;
  if (rows.size > 0 && (rows.traj == nullptr || rows.turn == nullptr)) {
    return Status::InvalidArgument("turn rows: traj and turn arrays are required");
  }
  const bool have_groups = rows.group != nullptr;
  if (have_groups && num_groups <= 0) {
    int64_t mx = -1;
    for (size_t i = 0; i < rows.size; ++i) mx = std::max(mx, rows.group[i]);
    num_groups = mx + 1;
  }
  out.num_groups = have_groups ? num_groups : 0;
  // One branch-free pass: padding rows sit at random places in a batch, and a branch on them mispredicts
  // often enough to triple the cost. Violations are only flagged here and explained by FirstViolation.
  int64_t last_turn = 0, traj_group = -1, trajectories = 0, real_rows = 0, max_turn = 0;
  bool bad = false;
  const int64_t* traj = rows.traj;
  const int64_t* turn = rows.turn;
  const int64_t* group = rows.group;
  for (size_t i = 0; i < rows.size; ++i) {
    const bool start = i == 0 || traj[i] != traj[i - 1];
    trajectories += start;
    last_turn = start ? 0 : last_turn;
    const int64_t t = turn[i];
    const bool real = t > 0;
    bad |= real & (t <= last_turn);
    real_rows += real;
    last_turn = real ? t : last_turn;
    max_turn = std::max(max_turn, t);  // padding turns are <= 0 and never raise it
    if (have_groups) {
      traj_group = start ? -1 : traj_group;
      const int64_t g = group[i];
      bad |= real & ((g < 0) | (g >= num_groups) | ((traj_group >= 0) & (g != traj_group)));
      traj_group = real ? g : traj_group;
    }
  }
  if (bad) {
    if (Status s = FirstViolation(rows, num_groups); !s.ok()) return s;
  }
  out.num_trajectories = trajectories;
  out.num_real_rows = real_rows;
  out.max_turn = max_turn;
  if (layout) *layout = out;
  return Status::Ok();
}

}  // namespace kgym::rl
