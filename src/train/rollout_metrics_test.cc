#include "train/rollout_metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "train/test_records.h"

namespace kgym::train {
namespace {

using testing::Record;

TEST(RolloutMetrics, GradesAndCountsKnownSolutions) {
  const std::string dir = ::testing::TempDir() + "/solutions";
  std::filesystem::create_directories(dir + "/level1");
  std::ofstream(dir + "/level1/relu_fast.py") << "class ModelNew: fast\n";
  std::ofstream(dir + "/level1/relu_slow.py") << "\n  class ModelNew: slow  \n";
  KnownSolutions known;
  ASSERT_TRUE(LoadKnownSolutions(dir, {"level1/relu", "level1/absent"}, &known).ok());
  ASSERT_EQ(known["level1/relu"].size(), 2u);
  EXPECT_EQ(known.count("level1/absent"), 0u);

  std::vector<nlohmann::json> recs;
  for (int i = 0; i < 4; ++i) {
    auto r = Record("level1/relu", i, {{.reward = 1.0 + i, .correct = i > 0, .speedup = 1.0 * i, .coverage = 0.5}});
    r["turns"][0]["code"] = i < 3 ? "class ModelNew: fast" : "class ModelNew: slow";
    recs.push_back(r);
  }
  nlohmann::json m = RolloutMetrics(recs, &known, "rollout");
  EXPECT_DOUBLE_EQ(m["rollout/solution/fast"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(m["rollout/solution/slow"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(m["rollout/correct_rate"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(m["rollout/fast@2"].get<double>(), 0.5);  // speedups 1, 2, 3 among 4 samples
  EXPECT_DOUBLE_EQ(m["rollout/mean_reward"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(m["rollout/speedup_mean"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(m["rollout/response_tokens_mean"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(m["rollout/llm_s"].get<double>(), 2.0);
  EXPECT_FALSE(RolloutMetrics(recs, nullptr, "val").contains("val/solution/fast"));
  EXPECT_FALSE(LoadKnownSolutions(dir + "/missing", {"x"}, &known).ok());
}

}  // namespace
}  // namespace kgym::train
