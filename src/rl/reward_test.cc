#include "rl/reward.h"

#include <gtest/gtest.h>

namespace kgym::rl {
namespace {

using nlohmann::json;

json Completed(bool correct, double speedup, double custom_us = 0, double total_us = 0) {
  return {{"status", "completed"},
          {"compiled", true},
          {"correctness", correct},
          {"decoy_kernel", false},
          {"speedup", speedup},
          {"metadata",
           {{"custom_kernel_cuda_time_in_profiling_us", custom_us},
            {"total_kernel_run_time_in_profiling_us", total_us},
            {"num_custom_kernels", 1},
            {"num_total_kernels", 4}}}};
}

TEST(Reward, SpeedupRecipeDefaults) {
  RewardConfig cfg;  // 0.5 C + 0.5 min(s, 3) + 0.5 C cov
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 2.0, 30, 40), cfg), 0.5 + 1.0 + 0.5 * 0.75);
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 7.0, 0, 0), cfg), 0.5 + 1.5);  // clipped at 3, denom 0 -> cov 0
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(false, 0.0, 30, 40), cfg), 0.0);     // coverage only when correct
  cfg.coverage_enable = false;
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 2.0, 30, 40), cfg), 1.5);
}

TEST(Reward, LowerBoundZeroesSmallSpeedups) {
  RewardConfig cfg;
  cfg.coverage_enable = false;
  cfg.speedup_reward_lower_bound = 1.0;
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 0.9), cfg), 0.5);
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 1.2), cfg), 0.5 + 0.6);
}

TEST(Reward, PenaltiesForFailureAndDecoy) {
  RewardConfig cfg;
  json failed = {{"status", "failed"}, {"error_message", "boom"}};
  RewardBreakdown b = ComputeRewardBreakdown(failed, cfg);
  EXPECT_DOUBLE_EQ(b.reward, 0.0);
  EXPECT_EQ(b.error, "boom");
  json decoy = Completed(true, 2.5, 10, 10);
  decoy["decoy_kernel"] = true;
  b = ComputeRewardBreakdown(decoy, cfg);
  EXPECT_DOUBLE_EQ(b.reward, 0.0);
  EXPECT_TRUE(b.decoy_kernel);
  EXPECT_EQ(b.error, "Reward hacking: Decoy kernel detected");
  cfg.penalty_score = -0.25;
  EXPECT_DOUBLE_EQ(ComputeReward(decoy, cfg), -0.25);
  ASSERT_TRUE(ParseRewardName("calculate_reward_like_kernel", &cfg).ok());
  EXPECT_DOUBLE_EQ(ComputeReward(decoy, cfg), -1.0);
  EXPECT_DOUBLE_EQ(ComputeReward(failed, cfg), -1.0);
}

TEST(Reward, Weighted) {
  RewardConfig cfg;
  ASSERT_TRUE(ParseRewardName("weighted", &cfg).ok());
  cfg.coverage_enable = false;
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 1.005), cfg), 0.5);  // below 1 + eps
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, 1.01), cfg), 1.0);
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(false, 0.0), cfg), 0.0);
}

TEST(Reward, LikeKernelTiers) {
  RewardConfig cfg;
  ASSERT_TRUE(ParseRewardName("like_kernel", &cfg).ok());
  json not_compiled = Completed(false, 0);
  not_compiled["compiled"] = false;
  EXPECT_DOUBLE_EQ(ComputeReward(not_compiled, cfg), -0.5);
  EXPECT_DOUBLE_EQ(ComputeReward(Completed(false, 0), cfg), -0.3);
  const std::pair<double, double> tiers[] = {{3.0, 1.0}, {2.0, 0.8}, {1.5, 0.6}, {1.2, 0.4}, {1.0, 0.2}, {0.99, -0.1}};
  for (auto [s, r] : tiers) EXPECT_DOUBLE_EQ(ComputeReward(Completed(true, s, 9, 10), cfg), r) << s;
}

TEST(Reward, PaperEq8IsTwiceTheRecipe) {
  RewardConfig recipe, paper;
  ASSERT_TRUE(ParseRewardName("paper_eq8", &paper).ok());
  for (double s : {0.5, 1.0, 2.08, 5.0}) {
    json r = Completed(true, s, 8615, 10000);
    EXPECT_NEAR(ComputeReward(r, paper), 2.0 * ComputeReward(r, recipe), 1e-12);
  }
}

TEST(Reward, CoverageKeyFallbacks) {
  json r = {{"status", "completed"},
            {"correctness", true},
            {"speedup", 1.0},
            {"num_custom_kernel", 3},
            {"num_total_kernel", 4},
            {"custom_kernel_cuda_time_in_profiling_us", 1.0},
            {"metadata", {{"total_kernel_run_time_in_profiling_us", 4.0}}}};
  EXPECT_DOUBLE_EQ(NumberCoverage(r), 0.75);      // singular names at the top level
  EXPECT_DOUBLE_EQ(TimeCoverage(r), 0.25);        // numerator top level, denominator metadata
  r["metadata"]["num_custom_kernels"] = nullptr;  // present but null in metadata wins and counts 0
  EXPECT_DOUBLE_EQ(NumberCoverage(r), 0.0);
  RewardConfig cfg;
  cfg.coverage_type = CoverageType::kNumber;
  r["metadata"].erase("num_custom_kernels");
  EXPECT_DOUBLE_EQ(ComputeReward(r, cfg), 0.5 + 0.5 + 0.5 * 0.75);
}

TEST(Reward, MissingAndNullFields) {
  RewardConfig cfg;
  EXPECT_DOUBLE_EQ(ComputeReward(json{{"status", "completed"}, {"speedup", nullptr}}, cfg), 0.0);
  EXPECT_DOUBLE_EQ(ComputeReward(json::array(), cfg), 0.0);
  RewardBreakdown b = ComputeRewardBreakdown(json{{"status", "timeout"}}, cfg);
  EXPECT_EQ(b.error, "Task failed");
}

TEST(Reward, Names) {
  RewardConfig cfg;
  EXPECT_TRUE(ParseRewardName("calculate_reward_speedup", &cfg).ok());
  EXPECT_EQ(cfg.name, "speedup");
  EXPECT_TRUE(ParseRewardName("calculate_reward_weighted", &cfg).ok());
  EXPECT_EQ(cfg.name, "weighted");
  Status s = ParseRewardName("fastest", &cfg);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("like_kernel"), std::string::npos);
  cfg.name = "bogus";
  RewardBreakdown b = ComputeRewardBreakdown(Completed(true, 2), cfg);
  EXPECT_DOUBLE_EQ(b.reward, cfg.penalty_score);
  EXPECT_FALSE(b.error.empty());
}

TEST(Reward, BreakdownJson) {
  RewardConfig cfg;
  json j = RewardBreakdownToJson(ComputeRewardBreakdown(Completed(true, 1.5, 1, 2), cfg));
  EXPECT_DOUBLE_EQ(j["reward"].get<double>(), j["score"].get<double>());
  EXPECT_TRUE(j["success"].get<bool>());
  EXPECT_DOUBLE_EQ(j["time_coverage"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["num_coverage"].get<double>(), 0.25);
  EXPECT_FALSE(j.contains("error"));
}

}  // namespace
}  // namespace kgym::rl
