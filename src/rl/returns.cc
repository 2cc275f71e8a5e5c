#include "rl/returns.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/parallel_for.h"

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

namespace {

// One pass from the last row to the first; errors name the first offending row met on the way.
Status ReturnsAndLayoutSerial(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                              int64_t num_groups, double* returns, TurnLayout* layout) {
  if (rows.size > 0 && (rows.traj == nullptr || rows.turn == nullptr)) {
    return Status::InvalidArgument("turn rows: traj and turn arrays are required");
  }
  const bool have_groups = rows.group != nullptr;
  TurnLayout out;
  int64_t max_group = -1;
  double running = 0.0;
  int64_t next_turn = 0;  // the real turn after this row in the same trajectory (0: none yet)
  int64_t traj_group = -1;
  for (size_t k = rows.size; k-- > 0;) {
    if (k + 1 == rows.size || rows.traj[k + 1] != rows.traj[k]) {  // last row of a trajectory
      running = 0.0;
      next_turn = 0;
      traj_group = -1;
      ++out.num_trajectories;
    }
    const int64_t t = rows.turn[k];
    if (t <= 0) {
      returns[k] = 0.0;
      continue;
    }
    if (next_turn != 0 && t >= next_turn) {
      return Status::InvalidArgument("row " + std::to_string(k + 1) + ": turn " + std::to_string(next_turn) +
                                     " does not follow turn " + std::to_string(t) + " of trajectory " +
                                     std::to_string(rows.traj[k]) +
                                     "; rows of a trajectory must be adjacent and in turn order");
    }
    next_turn = t;
    ++out.num_real_rows;
    if (t > out.max_turn) out.max_turn = t;
    if (have_groups) {
      const int64_t g = rows.group[k];
      if (g < 0 || (num_groups > 0 && g >= num_groups)) {
        return Status::InvalidArgument("row " + std::to_string(k) + ": group " + std::to_string(g) +
                                       " is outside [0, " + std::to_string(num_groups) + "); pass dense group ids");
      }
      if (traj_group >= 0 && g != traj_group) {
        return Status::InvalidArgument("row " + std::to_string(k) + ": trajectory " + std::to_string(rows.traj[k]) +
                                       " changes group from " + std::to_string(g) + " to " +
                                       std::to_string(traj_group));
      }
      traj_group = g;
      max_group = g > max_group ? g : max_group;
    }
    const double r = (loss_mask == nullptr || loss_mask[k]) ? rewards[k] : 0.0;
    running = r + gamma * running;
    returns[k] = running;
  }
  out.num_groups = have_groups ? (num_groups > 0 ? num_groups : max_group + 1) : 0;
  if (layout) *layout = out;
  return Status::Ok();
}

}  // namespace

Status detail::ReturnsAndLayout(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                                int64_t num_groups, double* returns, TurnLayout* layout) {
  if (rows.size > 0 && (rows.traj == nullptr || rows.turn == nullptr)) {
    return Status::InvalidArgument("turn rows: traj and turn arrays are required");
  }
  // The recursion is a chain of dependent multiply-adds, but trajectories are independent: large batches run as a
  // few serial passes over parts split at trajectory boundaries (each row computed exactly as in one pass). Any
  // error is reported by one pass over the whole batch, so the message is the same as without the split.
  std::vector<size_t> cut = EvenCuts(rows.size, size_t{1} << 17);
  if (cut.size() <= 2) return ReturnsAndLayoutSerial(rows, rewards, loss_mask, gamma, num_groups, returns, layout);
  for (size_t p = 1; p + 1 < cut.size(); ++p) {
    size_t c = std::max(cut[p - 1], cut[p]);
    while (c > 0 && c < rows.size && rows.traj[c] == rows.traj[c - 1]) ++c;  // never split a trajectory
    cut[p] = c;
  }
  std::vector<TurnLayout> part(cut.size() - 1);
  std::vector<uint8_t> failed(cut.size() - 1, 0);
  ParallelForRanges(cut, [&](size_t p, size_t from, size_t to) {
    TurnRows sub{to - from, rows.group != nullptr ? rows.group + from : nullptr, rows.traj + from, rows.turn + from};
    failed[p] = !ReturnsAndLayoutSerial(sub, rewards + from, loss_mask != nullptr ? loss_mask + from : nullptr, gamma,
                                        num_groups, returns + from, &part[p])
                     .ok();
  });
  for (uint8_t f : failed) {
    if (f) return ReturnsAndLayoutSerial(rows, rewards, loss_mask, gamma, num_groups, returns, layout);
  }
  TurnLayout out;
  for (const TurnLayout& l : part) {
    out.num_groups = std::max(out.num_groups, l.num_groups);
    out.max_turn = std::max(out.max_turn, l.max_turn);
    out.num_trajectories += l.num_trajectories;
    out.num_real_rows += l.num_real_rows;
  }
  if (layout) *layout = out;
  return Status::Ok();
}

Status ComputeReturns(const TurnRows& rows, const double* rewards, const uint8_t* loss_mask, double gamma,
                      double* returns) {
  TurnRows no_groups = rows;
  no_groups.group = nullptr;
  return detail::ReturnsAndLayout(no_groups, rewards, loss_mask, gamma, 0, returns, nullptr);
}

}  // namespace kgym::rl
