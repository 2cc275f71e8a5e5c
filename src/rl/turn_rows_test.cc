#include "rl/turn_rows.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kgym::rl {
namespace {

// The contract checked the plain way, row by row (the branch-free pass must agree on every verdict, message and
// count).
Status PlainValidate(const TurnRows& rows, int64_t num_groups, TurnLayout* layout) {
  TurnLayout out;
  const bool have_groups = rows.group != nullptr;
  if (have_groups && num_groups <= 0) {
    int64_t mx = -1;
    for (size_t i = 0; i < rows.size; ++i) mx = rows.group[i] > mx ? rows.group[i] : mx;
    num_groups = mx + 1;
  }
  out.num_groups = have_groups ? num_groups : 0;
  int64_t last_turn = 0, traj_group = -1;
  for (size_t i = 0; i < rows.size; ++i) {
    if (i == 0 || rows.traj[i] != rows.traj[i - 1]) {
      ++out.num_trajectories;
      last_turn = 0;
      traj_group = -1;
    }
    const int64_t t = rows.turn[i];
    if (t <= 0) continue;
    ++out.num_real_rows;
    if (t <= last_turn) return Status::InvalidArgument("row " + std::to_string(i) + ": turn order");
    last_turn = t;
    if (t > out.max_turn) out.max_turn = t;
    if (have_groups) {
      const int64_t g = rows.group[i];
      if (g < 0 || g >= num_groups) return Status::InvalidArgument("row " + std::to_string(i) + ": group range");
      if (traj_group >= 0 && g != traj_group) {
        return Status::InvalidArgument("row " + std::to_string(i) + ": group change");
      }
      traj_group = g;
    }
  }
  if (layout) *layout = out;
  return Status::Ok();
}

std::string RowOf(const Status& s) { return s.message().substr(0, s.message().find(':')); }

TEST(TurnRows, BranchFreeValidationAgreesWithThePlainCheck) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int> turns(1, 4), pad(0, 2), coin(0, 99), small(0, 9);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int64_t> group, traj, turn;
    const int groups = 1 + small(rng);
    for (int64_t t = 0; t < 40; ++t) {
      const int64_t g = t % groups;
      const int k = turns(rng), p = pad(rng);
      for (int c = 0; c < p; ++c) group.push_back(g), traj.push_back(t), turn.push_back(-1);
      for (int c = 1; c <= k; ++c) group.push_back(g), traj.push_back(t), turn.push_back(c);
    }
    const int faults = trial % 4;  // none, then one to three random faults of the kinds the contract names
    for (int f = 0; f < faults; ++f) {
      const size_t i = rng() % turn.size();
      switch (coin(rng) % 4) {
        case 0:
          turn[i] = 1;
          break;  // a repeated or decreasing turn (unless it is the first)
        case 1:
          group[i] = groups + small(rng);
          break;  // outside [0, num_groups) when num_groups is given
        case 2:
          group[i] = -1;
          break;
        default:
          group[i] = (group[i] + 1) % groups;
          break;  // a trajectory that changes group
      }
    }
    for (bool with_groups : {true, false}) {
      for (int64_t num_groups : {int64_t{0}, int64_t{groups}}) {
        TurnRows rows{turn.size(), with_groups ? group.data() : nullptr, traj.data(), turn.data()};
        TurnLayout got, want;
        const Status gs = ValidateTurnRows(rows, num_groups, &got), ws = PlainValidate(rows, num_groups, &want);
        ASSERT_EQ(gs.ok(), ws.ok()) << "trial " << trial << ": " << gs.message() << " / " << ws.message();
        if (!ws.ok()) {
          ASSERT_EQ(RowOf(gs), RowOf(ws)) << gs.message() << " / " << ws.message();
          continue;
        }
        EXPECT_EQ(got.num_groups, want.num_groups);
        EXPECT_EQ(got.max_turn, want.max_turn);
        EXPECT_EQ(got.num_trajectories, want.num_trajectories);
        EXPECT_EQ(got.num_real_rows, want.num_real_rows);
      }
    }
  }
}

}  // namespace
}  // namespace kgym::rl
