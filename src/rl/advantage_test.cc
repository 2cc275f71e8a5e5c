#include "rl/advantage.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "rl/returns.h"
#include "rl/test_rows.h"

namespace kgym::rl {
namespace {

using testing::Batch;

struct Out {
  std::vector<double> g, a;
};

Out Estimate(const Batch& b, Estimator e, double gamma = 1.0) {
  Out o{std::vector<double>(b.size()), std::vector<double>(b.size())};
  AdvantageOptions opt;
  opt.estimator = e;
  opt.gamma = gamma;
  Status s = ComputeAdvantages(b.Rows(), b.reward.data(), b.mask.data(), opt, o.g.data(), o.a.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return o;
}

// Two prompts. Prompt 0: three rollouts of uneven length (3, 2, 1 turns, padding first); prompt 1: one rollout.
Batch Uneven() {
  Batch b;
  b.Add(0, 0, 1, 1.0).Add(0, 0, 2, 0.0).Add(0, 0, 3, 2.0);      // G = 3, 2, 2
  b.Add(0, 1, -1, 0, 0).Add(0, 1, 1, 0.5).Add(0, 1, 2, 1.5);    // G = -, 2, 1.5
  b.Add(0, 2, -1, 0, 0).Add(0, 2, -1, 0, 0).Add(0, 2, 1, 0.0);  // G = -, -, 0
  b.Add(1, 3, 1, 0.7).Add(1, 3, 2, 0.2);                        // G = 0.9, 0.2
  return b;
}

TEST(Trloo, HandComputedUnevenTurns) {
  Out o = Estimate(Uneven(), Estimator::kTrloo);
  // turn 1 of prompt 0: G = {3, 2, 0}, mean 5/3, n = 3 -> A = 1.5 (G - 5/3).
  EXPECT_NEAR(o.a[0], 1.5 * (3 - 5.0 / 3), 1e-12);
  EXPECT_NEAR(o.a[4], 1.5 * (2 - 5.0 / 3), 1e-12);
  EXPECT_NEAR(o.a[8], 1.5 * (0 - 5.0 / 3), 1e-12);
  // turn 2 of prompt 0: G = {2, 1.5} -> A = G - other.
  EXPECT_NEAR(o.a[1], 0.5, 1e-12);
  EXPECT_NEAR(o.a[5], -0.5, 1e-12);
  // turn 3 of prompt 0 and prompt 1 everywhere: a group of one -> baseline 0, A = G.
  EXPECT_DOUBLE_EQ(o.a[2], 2.0);
  EXPECT_DOUBLE_EQ(o.a[9], 0.9);
  EXPECT_DOUBLE_EQ(o.a[10], 0.2);
  // padding rows: return 0, advantage 0.
  for (int k : {3, 6, 7}) {
    EXPECT_EQ(o.g[k], 0.0);
    EXPECT_EQ(o.a[k], 0.0);
  }
}

TEST(Trloo, MaskedRowsLeaveTheGroupButFeedReturns) {
  Batch b;
  b.Add(0, 0, 1, 1.0).Add(0, 0, 2, 3.0, /*mask=*/0);
  b.Add(0, 1, 1, 0.0).Add(0, 1, 2, 1.0);
  b.Add(0, 2, 1, 0.0).Add(0, 2, 2, 0.0);
  Out o = Estimate(b, Estimator::kTrloo);
  EXPECT_DOUBLE_EQ(o.g[0], 1.0);  // the masked reward counts 0
  EXPECT_EQ(o.a[1], 0.0);
  // turn 2 group is {1.0, 0.0}: the masked row is not a member.
  EXPECT_NEAR(o.a[3], 1.0, 1e-12);
  EXPECT_NEAR(o.a[5], -1.0, 1e-12);
}

TEST(Trloo, TiesGiveZero) {
  Batch b;
  for (int t = 0; t < 4; ++t) b.Add(0, t, 1, 0.5);
  Out o = Estimate(b, Estimator::kTrloo);
  for (double a : o.a) EXPECT_NEAR(a, 0.0, 1e-12);
}

TEST(Grpo, HandComputed) {
  Out o = Estimate(Uneven(), Estimator::kGrpo);
  EXPECT_NEAR(o.a[0], 3 - 5.0 / 3, 1e-12);
  EXPECT_NEAR(o.a[8], -5.0 / 3, 1e-12);
  EXPECT_NEAR(o.a[1], 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(o.a[2], 2.0);  // group of one: baseline 0
}

TEST(TurnIndependentGrpo, UsesRawRewardsPooledOverTurns) {
  Out o = Estimate(Uneven(), Estimator::kTurnIndependentGrpo);
  // prompt 0 valid rewards: 1, 0, 2, 0.5, 1.5, 0 -> mean 5/6.
  EXPECT_NEAR(o.a[0], 1.0 - 5.0 / 6, 1e-12);
  EXPECT_NEAR(o.a[2], 2.0 - 5.0 / 6, 1e-12);
  EXPECT_NEAR(o.a[8], -5.0 / 6, 1e-12);
  EXPECT_NEAR(o.a[9], 0.7 - 0.45, 1e-12);
  EXPECT_DOUBLE_EQ(o.g[0], 3.0);  // returns are still reward-to-go
  Batch one;
  one.Add(0, 0, 1, 0.4);
  EXPECT_DOUBLE_EQ(Estimate(one, Estimator::kTurnIndependentGrpo).a[0], 0.4);
}

TEST(Rloo, TrajectoryOutcomeIsTheLastTurnReward) {
  Out o = Estimate(Uneven(), Estimator::kRloo);
  // prompt 0 outcomes: 2.0, 1.5, 0.0; LOO baselines 0.75, 1.0, 1.75.
  for (int k : {0, 1, 2}) EXPECT_NEAR(o.a[k], 1.25, 1e-12);
  for (int k : {4, 5}) EXPECT_NEAR(o.a[k], 0.5, 1e-12);
  EXPECT_NEAR(o.a[8], -1.75, 1e-12);
  EXPECT_EQ(o.a[3], 0.0);
  // prompt 1: one rollout -> baseline 0.
  EXPECT_DOUBLE_EQ(o.a[9], 0.2);
  EXPECT_DOUBLE_EQ(o.a[10], 0.2);
}

TEST(Erloo, PooledLeaveOneOut) {
  Out o = Estimate(Uneven(), Estimator::kErloo);
  // prompt 0 valid returns: 3, 2, 2, 2, 1.5, 0 (n = 6, sum 10.5).
  const double mean = 10.5 / 6;
  EXPECT_NEAR(o.a[0], 6.0 / 5 * (3 - mean), 1e-12);
  EXPECT_NEAR(o.a[8], 6.0 / 5 * (0 - mean), 1e-12);
  EXPECT_NEAR(o.a[9], 0.9 - 0.2, 1e-12);
}

TEST(ErlooNorm, SmallAndLargeGroups) {
  Batch b;
  b.Add(0, 0, 1, 2.0);                    // group of one
  b.Add(1, 1, 1, 1.0).Add(1, 2, 1, 4.0);  // group of two
  b.Add(2, 3, 1, 1.0).Add(2, 4, 1, 2.0).Add(2, 5, 1, 4.0).Add(2, 6, 1, 7.0);
  Out o = Estimate(b, Estimator::kErlooNorm);
  EXPECT_NEAR(o.a[0], 2.0, 1e-7);
  EXPECT_NEAR(o.a[1], -3.0, 1e-7);
  EXPECT_NEAR(o.a[2], 3.0, 1e-7);
  // Row with 1.0: others {2, 4, 7}: mean 13/3, unbiased std sqrt(((2-13/3)^2+(4-13/3)^2+(7-13/3)^2)/2).
  const double m = 13.0 / 3;
  const double sd = std::sqrt(((2 - m) * (2 - m) + (4 - m) * (4 - m) + (7 - m) * (7 - m)) / 2);
  EXPECT_NEAR(o.a[3], (1.0 - m) / (sd + 1e-8), 1e-9);
}

TEST(Reinforce, BatchWhitening) {
  Batch b;
  b.Add(0, 0, 1, 1.0).Add(1, 1, 1, 3.0).Add(1, 2, 1, 5.0, /*mask=*/0);
  Out o = Estimate(b, Estimator::kReinforce);
  const double sd = std::sqrt(2.0);  // {1, 3}: mean 2, unbiased std sqrt(2)
  EXPECT_NEAR(o.a[0], -1.0 / (sd + 1e-6), 1e-12);
  EXPECT_NEAR(o.a[1], 1.0 / (sd + 1e-6), 1e-12);
  EXPECT_EQ(o.a[2], 0.0);
  Batch one;
  one.Add(0, 0, 1, 0.8);
  EXPECT_NEAR(Estimate(one, Estimator::kReinforce).a[0], 0.8 / (1 + 1e-6), 1e-12);
}

TEST(Advantages, ErrorsNameTheProblem) {
  Batch b;
  b.Add(0, 0, 1, 1.0).Add(5, 1, 1, 1.0);
  std::vector<double> g(2), a(2);
  AdvantageOptions opt;
  opt.num_groups = 2;
  Status s = ComputeAdvantages(b.Rows(), b.reward.data(), nullptr, opt, g.data(), a.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("group 5"), std::string::npos);
  Estimator e;
  EXPECT_FALSE(ParseEstimator("ppo", &e).ok());
  EXPECT_TRUE(ParseEstimator("erloo_norm", &e).ok());
  EXPECT_STREQ(EstimatorName(e), "erloo_norm");
}

// Random batches: prompts × rollouts with 1..3 turns, padding first, random masks and ties.
Batch RandomBatch(std::mt19937_64& rng, int prompts, int rollouts) {
  Batch b;
  std::uniform_int_distribution<int> turns(1, 3), tie(0, 3);
  std::uniform_real_distribution<double> u(0, 1);
  int64_t traj = 0;
  for (int p = 0; p < prompts; ++p) {
    for (int r = 0; r < rollouts; ++r, ++traj) {
      const int t = turns(rng);
      for (int k = 0; k < 3 - t; ++k) b.Add(p, traj, -1, 0.0, 0);
      for (int k = 1; k <= t; ++k) b.Add(p, traj, k, tie(rng) * 0.5, u(rng) < 0.85 ? 1 : 0);
    }
  }
  return b;
}

TEST(Property, TrlooIsScaledMeanCentringAndGrpoSumsToZero) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Batch b = RandomBatch(rng, 5, 1 + trial % 6);
    Out t = Estimate(b, Estimator::kTrloo, 0.9);
    Out g = Estimate(b, Estimator::kGrpo, 0.9);
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < b.size(); ++i) {
      if (b.turn[i] > 0 && b.mask[i]) groups[{b.group[i], b.turn[i]}].push_back(i);
    }
    for (const auto& [key, idx] : groups) {
      const double n = static_cast<double>(idx.size());
      double mean = 0, grpo_sum = 0;
      for (size_t i : idx) mean += t.g[i] / n;
      for (size_t i : idx) {
        const double expect = idx.size() == 1 ? t.g[i] : n / (n - 1) * (t.g[i] - mean);
        EXPECT_NEAR(t.a[i], expect, 1e-9);
        grpo_sum += g.a[i];
      }
      if (idx.size() > 1) {
        EXPECT_NEAR(grpo_sum, 0.0, 1e-9);
      }
    }
    for (size_t i = 0; i < b.size(); ++i) {
      if (b.turn[i] <= 0 || !b.mask[i]) {
        EXPECT_EQ(t.a[i], 0.0);
        EXPECT_EQ(g.a[i], 0.0);
      }
    }
  }
}

// The group baseline as first written (two passes, divisions per row, branches on padding and masks): the
// per-slot affine form and the threaded second pass must give the same bits.
std::vector<double> PlainBaseline(const Batch& b, const std::vector<double>& g, bool leave_one_out) {
  std::map<std::pair<int64_t, int64_t>, std::pair<double, int64_t>> tot;  // (group, turn) -> (sum, count)
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.turn[i] <= 0 || !b.mask[i]) continue;
    auto& t = tot[{b.group[i], b.turn[i]}];
    t.first += g[i];
    ++t.second;
  }
  std::vector<double> adv(b.size(), 0.0);
  for (size_t i = 0; i < b.size(); ++i) {
    if (b.turn[i] <= 0 || !b.mask[i]) continue;
    const auto& [sum, n] = tot[{b.group[i], b.turn[i]}];
    if (n <= 1) {
      adv[i] = g[i];
    } else if (leave_one_out) {
      const double k = static_cast<double>(n) / static_cast<double>(n - 1);
      adv[i] = g[i] * k - (sum / static_cast<double>(n)) * k;
    } else {
      adv[i] = g[i] - sum / static_cast<double>(n);
    }
  }
  return adv;
}

TEST(Trloo, LargeInterleavedBatchEqualsThePlainBaselineBitForBit) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> turns(1, 3);
  std::normal_distribution<double> r(0.5, 1.0);
  std::uniform_real_distribution<double> u(0, 1);
  Batch b;
  const int prompts = 6000, rollouts = 16;  // 288k rows: the returns and the baselines run on threads
  int64_t traj = 0;
  for (int k = 0; k < rollouts; ++k) {  // rollouts of all prompts interleaved: groups are not contiguous
    for (int p = 0; p < prompts; ++p, ++traj) {
      const int t = turns(rng);
      for (int c = 0; c < 3 - t; ++c) b.Add(p, traj, -1, 0.0, 0);
      for (int c = 1; c <= t; ++c) b.Add(p, traj, c, u(rng) < 0.2 ? 1.0 : r(rng), u(rng) < 0.9 ? 1 : 0);
    }
  }
  for (auto [e, loo] : {std::pair{Estimator::kTrloo, true}, std::pair{Estimator::kGrpo, false}}) {
    for (int64_t num_groups : {int64_t{0}, int64_t{prompts}}) {
      Out o{std::vector<double>(b.size()), std::vector<double>(b.size())};
      AdvantageOptions opt;
      opt.estimator = e;
      opt.gamma = 0.95;
      opt.num_groups = num_groups;
      ASSERT_TRUE(ComputeAdvantages(b.Rows(), b.reward.data(), b.mask.data(), opt, o.g.data(), o.a.data()).ok());
      const std::vector<double> want = PlainBaseline(b, o.g, loo);
      ASSERT_EQ(std::memcmp(o.a.data(), want.data(), want.size() * sizeof(double)), 0) << EstimatorName(e);
    }
  }
}

}  // namespace
}  // namespace kgym::rl
