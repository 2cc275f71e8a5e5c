#include "train/rl_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "rl/advantage.h"
#include "train/test_records.h"
#include "train/train_config.h"

namespace kgym::train {
namespace {

using testing::Record;
using testing::TurnSpec;

RlStepOptions Plain() {
  RlStepOptions o;
  o.mrs = false;
  o.prs = false;
  o.group_filter = false;
  o.mask_void_turns = false;
  return o;
}

std::vector<std::vector<double>> EngineLogprobs(const TrainBatch& b) {
  std::vector<std::vector<double>> lp;
  for (const auto& r : b.rows) lp.push_back(r.rollout_logprobs);
  return lp;
}

// The rewards of the RL core's `Uneven` batch (src/rl/advantage_test.cc) without its padding rows, as rollouts.
TrainBatch Uneven() {
  std::vector<nlohmann::json> recs = {Record("p0", 0, {{.reward = 1.0}, {.reward = 0.0}, {.reward = 2.0}}),
                                      Record("p0", 1, {{.reward = 0.5}, {.reward = 1.5}}),
                                      Record("p0", 2, {{.reward = 0.0}}),
                                      Record("p1", 0, {{.reward = 0.7}, {.reward = 0.2}})};
  TrainBatch b;
  EXPECT_TRUE(BuildTrainBatch(recs, {"p0", "p1"}, 3, "time_coverage", &b).ok());
  return b;
}

TEST(RlStep, TrlooFromRolloutsMatchesTheRlCore) {
  TrainBatch b = Uneven();
  RlStepOutcome o;
  ASSERT_TRUE(RunRlStep(b, EngineLogprobs(b), Plain(), &o).ok());
  // By hand (research/drkernel.md §2.3): returns G per row, then groups (uid, turn) with A = n/(n-1)(G - mean).
  const std::vector<double> G = {3, 2, 2, 2, 1.5, 0, 0.9, 0.2};
  const std::vector<double> A = {2, 0.5, 2, 0.5, -0.5, -2.5, 0.9, 0.2};
  ASSERT_EQ(o.returns.size(), G.size());
  for (size_t i = 0; i < G.size(); ++i) {
    EXPECT_NEAR(o.returns[i], G[i], 1e-12) << i;
    EXPECT_NEAR(o.advantages[i], A[i], 1e-12) << i;
  }
  // And the same arrays through the RL core directly.
  std::vector<int64_t> g, t, k;
  std::vector<double> r;
  for (const auto& row : b.rows)
    g.push_back(row.uid), t.push_back(row.traj), k.push_back(row.turn), r.push_back(row.reward);
  std::vector<double> ret(r.size()), adv(r.size());
  rl::AdvantageOptions ao;
  ASSERT_TRUE(
      rl::ComputeAdvantages({r.size(), g.data(), t.data(), k.data()}, r.data(), nullptr, ao, ret.data(), adv.data())
          .ok());
  EXPECT_EQ(adv, o.advantages);
  EXPECT_EQ(o.in_loss, std::vector<uint8_t>(8, 1));
}

TEST(RlStep, MrsRejectsMismatchedTrajectoriesAndVetoesTokens) {
  TrainBatch b = Uneven();
  auto lp = EngineLogprobs(b);
  for (double& x : lp[3]) x += 0.01;  // trajectory 1 (rows 3, 4): mean log-ratio 0.006 over its tokens > log 1.001
  lp[6][1] -= 10.0;                   // one token of p1's first turn: ratio e^-10 < 1e-4: vetoed, while
  for (double& x : lp[7]) x += 10.0 / 3.0;  // its trajectory's mean log-ratio stays 0 (the geometric test passes)
  RlStepOptions o = Plain();
  o.mrs = true;
  RlStepOutcome out;
  ASSERT_TRUE(RunRlStep(b, lp, o, &out).ok());
  EXPECT_EQ(out.mrs_keep, (std::vector<uint8_t>{1, 1, 1, 0, 0, 1, 0, 1}));
  EXPECT_EQ(out.in_loss, out.mrs_keep);
  EXPECT_EQ(out.token_mask[3], std::vector<uint8_t>(3, 0));
  // Rejected rows still count in the baselines: the advantages are those without MRS.
  RlStepOutcome plain;
  ASSERT_TRUE(RunRlStep(b, lp, Plain(), &plain).ok());
  EXPECT_EQ(out.advantages, plain.advantages);
  EXPECT_GT(out.metrics["mismatch/abs_max"].get<double>(), 9.9);
  EXPECT_NEAR(out.metrics["mrs/keep_frac"].get<double>(), 5.0 / 8.0, 1e-12);
}

TEST(RlStep, PrsJudgesCorrectTurnsByCoverage) {
  std::vector<nlohmann::json> recs = {
      Record("p", 0, {{.reward = 1.6, .correct = true, .speedup = 1.5, .coverage = 0.9}}),
      Record("p", 1, {{.reward = 1.1, .correct = true, .speedup = 1.0, .coverage = 0.2}}),
      Record("p", 2, {{.reward = 0.0, .correct = false, .coverage = 0.0}}),
      Record("p", 3, {{.reward = 1.2, .correct = true, .speedup = 1.1, .coverage = 0.35}})};
  TrainBatch b;
  ASSERT_TRUE(BuildTrainBatch(recs, {"p"}, 4, "time_coverage", &b).ok());
  RlStepOptions o = Plain();
  o.prs = true;
  RlStepOutcome out;
  ASSERT_TRUE(RunRlStep(b, EngineLogprobs(b), o, &out).ok());
  EXPECT_DOUBLE_EQ(out.prs_prob[0], 1.0);
  EXPECT_DOUBLE_EQ(out.prs_prob[1], 0.0);   // coverage 0.2 <= 0.3: always dropped
  EXPECT_DOUBLE_EQ(out.prs_prob[2], 1.0);   // incorrect turns are not PRS's to judge
  EXPECT_NEAR(out.prs_prob[3], 0.5, 1e-9);  // (0.35 - 0.3) / 0.1
  EXPECT_EQ(out.prs_keep[0], 1);
  EXPECT_EQ(out.prs_keep[1], 0);
  EXPECT_EQ(out.prs_keep[2], 1);
}

TEST(RlStep, GroupFilterAndVoidTurns) {
  std::vector<nlohmann::json> recs = {Record("same", 0, {{.reward = 1.0}}), Record("same", 1, {{.reward = 1.0}}),
                                      Record("diff", 0, {{.reward = 1.0}, {.reward = 0.0}}),
                                      Record("diff", 1, {{.reward = 0.0}, {.reward = 0.5}})};
  TrainBatch b;
  ASSERT_TRUE(BuildTrainBatch(recs, {"same", "diff"}, 2, "time_coverage", &b).ok());
  RlStepOptions o = Plain();
  o.group_filter = true;
  o.mask_void_turns = true;
  RlStepOutcome out;
  ASSERT_TRUE(RunRlStep(b, EngineLogprobs(b), o, &out).ok());
  EXPECT_EQ(out.group_keep, (std::vector<uint8_t>{0, 0, 1, 1, 1, 1}));  // "same": zero variance
  EXPECT_EQ(out.loss_mask, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1}));   // 0 after an earlier positive turn: void
  EXPECT_EQ(out.in_loss, (std::vector<uint8_t>{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(out.advantages[3], 0.0);
}

TEST(RlStep, ShuffledRewardsKeepTheMultiset) {
  TrainBatch b = Uneven();
  RlStepOptions o = Plain();
  o.reward_shuffle = true;
  o.shuffle_seed = 7;
  RlStepOutcome out;
  ASSERT_TRUE(RunRlStep(b, EngineLogprobs(b), o, &out).ok());
  std::vector<double> raw;
  for (const auto& r : b.rows) raw.push_back(r.reward);
  EXPECT_NE(out.rewards, raw);
  auto a = out.rewards, c = raw;
  std::sort(a.begin(), a.end());
  std::sort(c.begin(), c.end());
  EXPECT_EQ(a, c);
  EXPECT_DOUBLE_EQ(out.metrics["reward/mean"].get<double>(), 5.9 / 8.0);  // reported rewards are the real ones
}

TEST(RlStep, OptionsFromTheDefaultConfig) {
  nlohmann::json cfg;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &cfg).ok());
  RlStepOptions o;
  ASSERT_TRUE(RlStepOptionsFromConfig(cfg, 3, &o).ok());
  EXPECT_EQ(o.advantage.estimator, rl::Estimator::kTrloo);
  EXPECT_TRUE(o.mrs && o.prs && o.group_filter && o.mask_void_turns);
  EXPECT_EQ(o.mrs_options.level, rl::MrsLevel::kGeometric);
  EXPECT_DOUBLE_EQ(o.mrs_options.veto, 1e-4);
  EXPECT_DOUBLE_EQ(o.prs_options.threshold, 0.3);
  ASSERT_TRUE(
      LoadTrainConfig(ConfigKind::kRl, "", {"algorithm.rollout_rs=null", "algorithm.adv_estimator=bogus"}, &cfg).ok());
  EXPECT_FALSE(RlStepOptionsFromConfig(cfg, 3, &o).ok());
}

TEST(RlStep, RefusesLogprobsThatDoNotFit) {
  TrainBatch b = Uneven();
  auto lp = EngineLogprobs(b);
  lp[2].pop_back();
  RlStepOutcome out;
  EXPECT_FALSE(RunRlStep(b, lp, Plain(), &out).ok());
  lp.pop_back();
  EXPECT_FALSE(RunRlStep(b, lp, Plain(), &out).ok());
}

}  // namespace
}  // namespace kgym::train
