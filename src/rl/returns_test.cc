#include "rl/returns.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kgym::rl
