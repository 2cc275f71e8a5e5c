// Test helper: a batch of turn rows built row by row.
#pragma once

#include <cstdint>
#include <vector>

#include "rl/turn_rows.h"

namespace kgym::rl::testing {

struct Batch {
  std::vector<int64_t> group, traj, turn;
  std::vector<double> reward;
  std::vector<uint8_t> mask;

  Batch& Add(int64_t g, int64_t t, int64_t k, double r, uint8_t m = 1) {
    group.push_back(g);
    traj.push_back(t);
    turn.push_back(k);
    reward.push_back(r);
    mask.push_back(m);
    return *this;
  }
  size_t size() const { return traj.size(); }
  TurnRows Rows() const { return {traj.size(), group.data(), traj.data(), turn.data()}; }
};

}  // namespace kgym::rl::testing
