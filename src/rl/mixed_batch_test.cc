#include "rl/mixed_batch.h"

#include <gtest/gtest.h>

#include <cmath>

#include "rl/test_rows.h"

namespace kgym::rl {
namespace {

using testing::Batch;

TEST(MixedBatch, PolicyTrlooNormalisedPerTaskAndWeightedLooForSkillAgents) {
  Batch b;  // task 0: two rollouts from different schemes, one turn each; task 1: one rollout.
  b.Add(0, 0, 1, 1.0).Add(0, 1, 1, 0.0).Add(1, 2, 1, 0.5);
  std::vector<int64_t> tokens = {10, 30, 5};
  PolicyPart pol;
  pol.rows = b.Rows();
  pol.rewards = b.reward.data();
  pol.loss_mask = b.mask.data();
  pol.token_count = tokens.data();
  std::vector<int64_t> sel_g = {0, 0, 0, 1};
  std::vector<double> sel_r = {1.0, 0.0, 0.5, 0.8};
  std::vector<int64_t> sum_g = {0, 0};
  std::vector<double> sum_r = {2.0, 0.0};
  OutcomePart sel{4, sel_g.data(), sel_r.data()}, sum{2, sum_g.data(), sum_r.data()};
  std::vector<double> ret(3), pa(3), sa(4), ua(2);
  MixedBatchOptions opt;
  ASSERT_TRUE(MixedBatchAdvantages(pol, sel, sum, opt, ret.data(), pa.data(), sa.data(), ua.data()).ok());
  // Task 0 TRLOO: +1, -1; mean |A| over tokens = 1 -> unchanged (up to 1e-8).
  EXPECT_NEAR(pa[0], 1.0, 1e-7);
  EXPECT_NEAR(pa[1], -1.0, 1e-7);
  // Task 1: A = 0.5, mean |A| = 0.5 -> 1.
  EXPECT_NEAR(pa[2], 1.0, 1e-7);
  // Selection: task 0 LOO: 1 - 0.25, 0 - 0.75, 0.5 - 0.5; times 0.3. Task 1 single: 0.8 * 0.3.
  EXPECT_NEAR(sa[0], 0.75 * 0.3, 1e-12);
  EXPECT_NEAR(sa[1], -0.75 * 0.3, 1e-12);
  EXPECT_NEAR(sa[2], 0.0, 1e-12);
  EXPECT_NEAR(sa[3], 0.24, 1e-12);
  EXPECT_NEAR(ua[0], 1.0, 1e-12);
  EXPECT_NEAR(ua[1], -1.0, 1e-12);
  opt.cross_scheme_norm = false;
  b.reward[0] = 3.0;
  ASSERT_TRUE(MixedBatchAdvantages(pol, {}, {}, opt, ret.data(), pa.data(), nullptr, nullptr).ok());
  EXPECT_NEAR(pa[0], 3.0, 1e-12);
}

TEST(MixedBatch, TokenWeightedMeanAbs) {
  Batch b;  // TRLOO over three rollouts: G = 3, 0, 0 -> A = 3, -1.5, -1.5
  b.Add(0, 0, 1, 3.0).Add(0, 1, 1, 0.0).Add(0, 2, 1, 0.0);
  std::vector<int64_t> tokens = {1, 1, 2};
  PolicyPart pol{b.Rows(), b.reward.data(), nullptr, tokens.data(), 0};
  std::vector<double> ret(3), pa(3);
  ASSERT_TRUE(MixedBatchAdvantages(pol, {}, {}, {}, ret.data(), pa.data(), nullptr, nullptr).ok());
  const double mean_abs = (3.0 + 1.5 + 2 * 1.5) / 4;
  EXPECT_NEAR(pa[0], 3.0 / (mean_abs + 1e-8), 1e-9);
  EXPECT_NEAR(pa[2], -1.5 / (mean_abs + 1e-8), 1e-9);
}

}  // namespace
}  // namespace kgym::rl
