#include "rl/group_filter.h"

#include <gtest/gtest.h>

#include "rl/test_rows.h"

namespace kgym::rl {
namespace {

using testing::Batch;

TEST(GroupFilter, DropsGroupsWithoutLastTurnVariance) {
  Batch b;
  // group 0: last turns 1.0 and 1.0 (earlier turns differ) -> dropped.
  b.Add(0, 0, 1, 0.0).Add(0, 0, 2, 1.0).Add(0, 1, -1, 0, 0).Add(0, 1, 1, 1.0);
  // group 1: last turns 0.5 and 0.0 -> kept; a masked last turn counts 0.
  b.Add(1, 2, 1, 0.5).Add(1, 3, 1, 0.0).Add(1, 3, 2, 9.0, /*mask=*/0);
  // group 2: one rollout -> no variance test, kept with min_group_size 1.
  b.Add(2, 4, 1, 0.3);
  std::vector<uint8_t> gk, rk(b.size());
  GroupFilterOptions opt;
  ASSERT_TRUE(ZeroVarianceGroupFilter(b.Rows(), b.reward.data(), b.mask.data(), opt, &gk, rk.data()).ok());
  EXPECT_EQ(gk, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(rk, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  opt.min_group_size = 2;
  ASSERT_TRUE(ZeroVarianceGroupFilter(b.Rows(), b.reward.data(), b.mask.data(), opt, &gk, rk.data()).ok());
  EXPECT_EQ(gk, (std::vector<uint8_t>{0, 1, 0}));
  opt.min_group_size = 1;
  opt.last_turn_only = false;  // group 0 then sees 0, 1, 1 -> variance
  ASSERT_TRUE(ZeroVarianceGroupFilter(b.Rows(), b.reward.data(), b.mask.data(), opt, &gk, rk.data()).ok());
  EXPECT_EQ(gk[0], 1);
}

TEST(GroupFilter, ThresholdIsOnTheUnbiasedStd) {
  Batch b;
  b.Add(0, 0, 1, 0.0).Add(0, 1, 1, 0.0015);  // unbiased std = 0.0015 / sqrt 2 = 0.00106 >= 1e-3
  b.Add(1, 2, 1, 0.0).Add(1, 3, 1, 0.0013);  // 0.00092 < 1e-3
  std::vector<uint8_t> gk, rk(b.size());
  ASSERT_TRUE(ZeroVarianceGroupFilter(b.Rows(), b.reward.data(), nullptr, {}, &gk, rk.data()).ok());
  EXPECT_EQ(gk, (std::vector<uint8_t>{1, 0}));
}

}  // namespace
}  // namespace kgym::rl
