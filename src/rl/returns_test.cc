#include "rl/returns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rl/test_rows.h"

namespace kgym::rl {
namespace {

using testing::Batch;

TEST(Returns, RewardToGoWithGammaAndPaddingFirst) {
  Batch b;
  b.Add(0, 7, -1, 0, 0).Add(0, 7, 1, 1.0).Add(0, 7, 2, 0.5);  // padding first, like VERL
  b.Add(0, 8, 1, 2.0).Add(0, 8, 2, 0.0).Add(0, 8, 3, 1.0);
  std::vector<double> g(b.size());
  ASSERT_TRUE(ComputeReturns(b.Rows(), b.reward.data(), b.mask.data(), 0.5, g.data()).ok());
  EXPECT_DOUBLE_EQ(g[0], 0.0);
  EXPECT_DOUBLE_EQ(g[1], 1.0 + 0.5 * 0.5);
  EXPECT_DOUBLE_EQ(g[2], 0.5);
  EXPECT_DOUBLE_EQ(g[3], 2.0 + 0.5 * (0.0 + 0.5 * 1.0));
  EXPECT_DOUBLE_EQ(g[4], 0.5);
  EXPECT_DOUBLE_EQ(g[5], 1.0);
}

TEST(Returns, MaskedRewardsCountZero) {
  Batch b;
  b.Add(0, 1, 1, 1.0).Add(0, 1, 2, 5.0, /*mask=*/0).Add(0, 1, 3, 2.0);
  std::vector<double> g(b.size());
  ASSERT_TRUE(ComputeReturns(b.Rows(), b.reward.data(), b.mask.data(), 1.0, g.data()).ok());
  EXPECT_DOUBLE_EQ(g[0], 3.0);
  EXPECT_DOUBLE_EQ(g[1], 2.0);
  EXPECT_DOUBLE_EQ(g[2], 2.0);
}

TEST(Returns, RejectsTurnsOutOfOrder) {
  Batch b;
  b.Add(0, 1, 2, 1.0).Add(0, 1, 1, 1.0);
  std::vector<double> g(b.size());
  Status s = ComputeReturns(b.Rows(), b.reward.data(), nullptr, 1.0, g.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("row 1"), std::string::npos);
}

TEST(Returns, ReappearingTrajectoryIdStartsANewTrajectory) {
  Batch b;
  b.Add(0, 1, 1, 1.0).Add(0, 2, 1, 10.0).Add(0, 1, 1, 100.0);
  std::vector<double> g(b.size());
  ASSERT_TRUE(ComputeReturns(b.Rows(), b.reward.data(), nullptr, 1.0, g.data()).ok());
  EXPECT_DOUBLE_EQ(g[0], 1.0);
  EXPECT_DOUBLE_EQ(g[2], 100.0);
}

TEST(VoidTurns, FailureAfterSuccessIsMasked) {
  Batch b;
  // traj 1: 0, 1, 0 -> third masked; traj 2: 0.5, -1, 0, 2 -> second and third masked; traj 3: 0, 0 kept.
  b.Add(0, 1, -1, 0, 0).Add(0, 1, 1, 0.0).Add(0, 1, 2, 1.0).Add(0, 1, 3, 0.0);
  b.Add(0, 2, 1, 0.5).Add(0, 2, 2, -1.0).Add(0, 2, 3, 0.0).Add(0, 2, 4, 2.0);
  b.Add(0, 3, 1, 0.0).Add(0, 3, 2, 0.0);
  std::vector<uint8_t> m(b.size(), 1);
  ASSERT_TRUE(MaskVoidTurns(b.Rows(), b.reward.data(), m.data()).ok());
  EXPECT_EQ(m, (std::vector<uint8_t>{0, 1, 1, 0, 1, 0, 0, 1, 1, 1}));
}

TEST(VoidTurns, FirstTurnKeepsAnExistingZeroMask) {
  Batch b;
  b.Add(0, 1, 1, 0.0).Add(0, 1, 2, 1.0);
  std::vector<uint8_t> m = {0, 1};
  ASSERT_TRUE(MaskVoidTurns(b.Rows(), b.reward.data(), m.data()).ok());
  EXPECT_EQ(m, (std::vector<uint8_t>{0, 1}));
}

// Returns of random batches (padding at random places, masks, NaN rewards on padding rows) equal the plain
// per-trajectory recursion bit for bit; the first violation met walking back from the end is the one named.
TEST(Returns, RandomBatchesEqualThePlainRecursion) {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> turns(1, 4), pad(0, 2);
  std::uniform_real_distribution<double> u(0, 1);
  Batch b;
  for (int64_t t = 0; t < 100000; ++t) {  // ~350k rows: split over threads
    std::vector<int64_t> ks;
    for (int c = 1; c <= turns(rng); ++c) ks.push_back(c);
    for (int p = pad(rng); p > 0; --p) ks.insert(ks.begin() + static_cast<long>(rng() % (ks.size() + 1)), -1);
    for (int64_t k : ks) b.Add(0, t, k, k > 0 ? u(rng) * 2 - 0.5 : std::nan(""), u(rng) < 0.85 ? 1 : 0);
  }
  std::vector<double> g(b.size()), want(b.size(), 0.0);
  ASSERT_TRUE(ComputeReturns(b.Rows(), b.reward.data(), b.mask.data(), 0.9, g.data()).ok());
  double running = 0.0;
  for (size_t k = b.size(); k-- > 0;) {
    if (k + 1 == b.size() || b.traj[k + 1] != b.traj[k]) running = 0.0;
    if (b.turn[k] <= 0) continue;
    running = (b.mask[k] ? b.reward[k] : 0.0) + 0.9 * running;
    want[k] = running;
  }
  ASSERT_EQ(std::memcmp(g.data(), want.data(), g.size() * sizeof(double)), 0);
  // Violations in both halves of a batch split over threads: the one met first walking back is named.
  Batch big;
  for (int64_t t = 0; t < 100000; ++t) big.Add(0, t, 1, 1.0).Add(0, t, 2, 1.0).Add(0, t, 3, 1.0);
  big.turn[3 * 10 + 1] = 1;
  big.turn[3 * 90000 + 1] = 1;
  std::vector<double> gb(big.size());
  const Status sb = ComputeReturns(big.Rows(), big.reward.data(), nullptr, 1.0, gb.data());
  ASSERT_FALSE(sb.ok());
  EXPECT_EQ(sb.message().rfind("row " + std::to_string(3 * 90000 + 1) + ": turn 1 does not follow turn 1", 0), 0u)
      << sb.message();
  Batch bad;
  bad.Add(0, 1, 2, 1.0).Add(0, 1, 1, 1.0).Add(0, 2, 1, 1.0).Add(0, 3, 3, 1.0).Add(0, 3, -1, 0, 0).Add(0, 3, 3, 1.0);
  std::vector<double> g2(bad.size());
  const Status s = ComputeReturns(bad.Rows(), bad.reward.data(), nullptr, 1.0, g2.data());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("row 4: turn 3 does not follow turn 3", 0), 0u) << s.message();
}

}  // namespace
}  // namespace kgym::rl
