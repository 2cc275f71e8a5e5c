#include "train/rollouts.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "run/run_params.h"
#include "train/train_config.h"

namespace kgym::train {
namespace {

TEST(RunSpecs, EveryYamlKeyOfTheRunParametersIsADocumentedDefault) {
  nlohmann::json rl, sft;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &rl).ok());
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kSft, "", {}, &sft).ok());
  for (const auto& p : run::RunParams()) {
    std::stringstream keys(p.keys);
    for (std::string key; std::getline(keys, key, ',');) {
      const nlohmann::json::json_pointer at("/" + std::regex_replace(key, std::regex("\\."), "/"));
      EXPECT_TRUE(rl.contains(at) || sft.contains(at))
          << p.flag << ": " << key << " is in neither configs/rl.yaml nor configs/sft.yaml";
    }
  }
}

TEST(RunSpecs, TrainingRunsComeFromTheConfiguration) {
  nlohmann::json cfg;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &cfg).ok());
  run::RunSpec train, val;
  ASSERT_TRUE(RlRunSpecs(cfg, &train, &val).ok());
  EXPECT_EQ(train.loop.samples, 16);
  EXPECT_EQ(train.loop.turns, 3);
  EXPECT_EQ(train.loop.layout, "lockstep");
  EXPECT_EQ(train.sampling.max_tokens, 8192);
  EXPECT_EQ(train.gym.request.num_perf_trials, 100);
  EXPECT_EQ(train.gym.request.timeout_s, 300);
  EXPECT_EQ(train.gym.request.device, "cuda");
  EXPECT_EQ(train.gym.eval_concurrency, 32);
  EXPECT_TRUE(train.reward.coverage);
  EXPECT_TRUE(train.sampling.logprobs && train.sampling.token_ids);
  EXPECT_EQ(val.loop.samples, 8);
  EXPECT_DOUBLE_EQ(val.sampling.top_p, 0.95);
  EXPECT_FALSE(val.sampling.logprobs);
}

// `kgym train key=value` and `kgym agent --flag value` set the same parameter the same way.
TEST(RunSpecs, OverridesAndFlagsGiveTheSameSpec) {
  nlohmann::json cfg;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kRl, "", {}, &cfg).ok());
  run::RunSpec from_flags, ignored;
  ASSERT_TRUE(RlRunSpecs(cfg, &from_flags, &ignored).ok());
  CLI::App app{"kgym agent"};
  run::AddRunFlags(&app, &from_flags,
                   {run::RunGroup::kSampling, run::RunGroup::kGym, run::RunGroup::kReward, run::RunGroup::kLoop});
  app.parse(std::vector<std::string>{"7", "--num-perf-trials", "lockstep", "--layout", "2", "--samples", "cpu",
                                     "--device", "small", "--size", "0.5", "--top-p", "calculate_reward_weighted",
                                     "--reward"});
  ASSERT_TRUE(
      LoadTrainConfig(ConfigKind::kRl, "",
                      {"gym.num_perf_trials=7", "rollout.layout=lockstep", "rollout.n=2", "gym.device=cpu",
                       "gym.size=small", "rollout.top_p=0.5", "reward.reward_func_name=calculate_reward_weighted"},
                      &cfg)
          .ok());
  run::RunSpec from_yaml;
  ASSERT_TRUE(RlRunSpecs(cfg, &from_yaml, &ignored).ok());
  EXPECT_EQ(from_flags.ToJson(), from_yaml.ToJson());
  EXPECT_EQ(from_yaml.loop.samples, 2);
}

TEST(RunSpecs, SftGradingIsGreedyOneTurnWithTheEvalSection) {
  nlohmann::json cfg;
  ASSERT_TRUE(LoadTrainConfig(ConfigKind::kSft, "", {"eval.num_perf_trials=3", "gym.device=cpu"}, &cfg).ok());
  run::RunSpec g;
  ASSERT_TRUE(GradeRunSpec(cfg, &g).ok());
  EXPECT_EQ(g.loop.samples, 1);
  EXPECT_EQ(g.loop.turns, 1);
  EXPECT_EQ(g.sampling.temperature, 0.0);
  EXPECT_EQ(g.sampling.max_tokens, 4096);
  EXPECT_EQ(g.gym.request.num_perf_trials, 3);
  EXPECT_EQ(g.gym.request.num_correct_trials, 5);
  EXPECT_EQ(g.gym.request.device, "cpu");
  EXPECT_EQ(g.reward.function, "calculate_reward_speedup");
  EXPECT_FALSE(g.reward.coverage);
}

}  // namespace
}  // namespace kgym::train
