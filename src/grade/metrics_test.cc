#include "grade/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kgym::grade {
namespace {

using nlohmann::json;

// A normal turn with an evaluation result; reward = 0.5C + 0.5 min(s, 3) as in Dr.Kernel's eval scripts.
json Turn(int n, bool compiled, bool correct, double speedup, bool decoy = false) {
  bool c = correct && !decoy;
  return {{"turn", n},
          {"abnormal", false},
          {"reward", c ? 0.5 + 0.5 * std::min(speedup, 3.0) : 0.0},
          {"result",
           {{"compiled", compiled},
            {"correctness", correct},
            {"decoy_kernel", decoy},
            {"speedup", correct ? speedup : 0.0}}}};
}
json Abnormal(int n) { return {{"turn", n}, {"abnormal", true}, {"error", "llm timeout"}}; }
json Traj(const std::string& task, const std::string& level, int sample, json turns) {
  return {{"key", task + "#" + std::to_string(sample)},
          {"task_id", task},
          {"level", level},
          {"sample", sample},
          {"status", "done"},
          {"turns", turns}};
}

std::vector<json> Constructed() {
  return {
      Traj("t1", "1", 0, {Turn(1, true, false, 0), Turn(2, true, true, 1.3), Turn(3, true, true, 1.0)}),
      Traj("t1", "1", 1, {Turn(1, true, true, 2.5), Abnormal(2)}),
      Traj("t2", "2", 0,
           {Turn(1, true, true, 1.5, /*decoy=*/true), Turn(2, false, false, 0), Turn(3, true, true, 1.2)}),
      Traj("t2", "2", 1, {Turn(1, true, true, 0.9), Turn(2, true, true, 3.0), Turn(3, true, true, 0.9)}),
  };
}

TEST(GradeTest, PerTurnRatesExcludeAbnormalTurnsAndCountHackingAsIncorrect) {
  json g = Grade(Constructed());
  const json& s = g["overall"];
  EXPECT_EQ(s["num_samples"], 4);
  EXPECT_EQ(s["num_tasks"], 2);
  EXPECT_EQ(s["max_turn"], 3);
  EXPECT_EQ(s["abnormal_turns"], 1);
  const json& t1 = s["turns"][0];
  EXPECT_EQ(t1["n"], 4);
  EXPECT_DOUBLE_EQ(t1["correctness_rate"], 0.5);  // the decoy is not correct
  EXPECT_DOUBLE_EQ(t1["compilation_rate"], 1.0);
  EXPECT_DOUBLE_EQ(t1["hacking_rate"], 0.25);
  EXPECT_DOUBLE_EQ(t1["fast_in_all"]["1"], 0.25);
  EXPECT_DOUBLE_EQ(t1["fast"]["1"], 0.5);  // conditional on correct
  EXPECT_DOUBLE_EQ(t1["mean_performance"], 1.7);
  EXPECT_DOUBLE_EQ(t1["mean_performance_in_all"], 3.4 / 4);
  const json& t2 = s["turns"][1];
  EXPECT_EQ(t2["n"], 3);  // the abnormal turn of t1#1 leaves the denominator
  EXPECT_DOUBLE_EQ(t2["correctness_rate"], 2.0 / 3);
  EXPECT_DOUBLE_EQ(t2["compilation_rate"], 2.0 / 3);
  EXPECT_DOUBLE_EQ(t2["fast_in_all"]["1.5"], 1.0 / 3);
  EXPECT_DOUBLE_EQ(t2["fast_in_all"]["3"], 1.0 / 3);  // speedup 3.0 counts for p = 3: ">="
  const json& t3 = s["turns"][2];
  EXPECT_DOUBLE_EQ(t3["fast_in_all"]["1"], 2.0 / 3);    // 1.0 >= 1 counts, 0.9 does not
  EXPECT_DOUBLE_EQ(t3["fast_in_all"]["1.2"], 1.0 / 3);  // 1.2 >= 1.2
  EXPECT_DOUBLE_EQ(t3["fast_in_all"]["1.5"], 0.0);
}

TEST(GradeTest, BestOfHistory) {
  json s = Grade(Constructed())["overall"];
  const json& b1 = s["best_by_turn"][0];
  EXPECT_EQ(b1["n"], 4);
  EXPECT_DOUBLE_EQ(b1["fast_in_all"]["1"], 0.25);  // only t1#1 (2.5); the decoy's 1.5 never counts
  const json& b3 = s["best_by_turn"][2];
  EXPECT_EQ(b3["n"], 4);  // t1#1 counts with its turn-1 best although it has no turn 3
  EXPECT_DOUBLE_EQ(b3["correctness_rate"], 1.0);
  EXPECT_DOUBLE_EQ(b3["fast_in_all"]["1.2"], 1.0);  // bests 1.3, 2.5, 1.2, 3.0
  EXPECT_DOUBLE_EQ(b3["fast_in_all"]["1.5"], 0.5);
  EXPECT_DOUBLE_EQ(b3["fast_in_all"]["3"], 0.25);
}

TEST(GradeTest, FinalPassAtKHackingAndLevels) {
  json g = Grade(Constructed());
  const json& s = g["overall"];
  // Final turns: t1#0 1.0 (reward 1.0), t1#1 2.5 (1.75), t2#0 1.2 (1.1), t2#1 0.9 (0.95 < 0.99).
  EXPECT_DOUBLE_EQ(s["final"]["correctness_rate"], 1.0);
  EXPECT_DOUBLE_EQ(s["final"]["fast_in_all"]["1"], 0.75);
  EXPECT_DOUBLE_EQ(s["pass_at_k"]["1"], 0.75);  // (1 + 0.5) / 2
  EXPECT_DOUBLE_EQ(s["pass_at_k"]["2"], 1.0);
  EXPECT_FALSE(s["pass_at_k"].contains("4"));  // fewer than 4 samples per task
  EXPECT_DOUBLE_EQ(s["hacking_ratio_turns"], 0.1);
  EXPECT_DOUBLE_EQ(s["hacking_ratio_samples"], 0.25);
  ASSERT_TRUE(g["levels"].contains("1"));
  ASSERT_TRUE(g["levels"].contains("2"));
  EXPECT_EQ(g["levels"]["2"]["num_samples"], 2);
  EXPECT_DOUBLE_EQ(g["levels"]["2"]["turns"][0]["correctness_rate"], 0.5);
  EXPECT_DOUBLE_EQ(g["levels"]["1"]["turns"][1]["n"], 1);
}

TEST(GradeTest, PassAtKEstimator) {
  EXPECT_DOUBLE_EQ(PassAtK(8, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(PassAtK(8, 8, 1), 1.0);
  EXPECT_NEAR(PassAtK(8, 2, 1), 0.25, 1e-12);
  EXPECT_NEAR(PassAtK(4, 1, 2), 0.5, 1e-12);  // 1 - C(3,2)/C(4,2) = 1 - 3/6
  EXPECT_DOUBLE_EQ(PassAtK(4, 3, 2), 1.0);
}

TEST(GradeTest, EmptyAndAllAbnormal) {
  json s = Grade({})["overall"];
  EXPECT_EQ(s["num_samples"], 0);
  EXPECT_TRUE(s["turns"].empty());
  json only = Grade({Traj("t", "1", 0, {Abnormal(1)})})["overall"];
  EXPECT_EQ(only["turns"][0]["n"], 0);
  EXPECT_TRUE(only["turns"][0]["correctness_rate"].is_null());
}

TEST(GradeTest, AHackedVerdictOfAnyFamilyCountsAsHacking) {
  json hacked = {{"turn", 1},
                 {"reward", 0.0},
                 {"result",
                  {{"compiled", true},
                   {"correctness", false},
                   {"outcome", "hacked"},
                   {"outcome_detail", "hacked (caching): fresh sets slow"}}}};
  json s = Grade({Traj("t", "1", 0, {hacked}), Traj("t", "1", 1, {Turn(1, true, true, 1.0)})})["overall"];
  EXPECT_DOUBLE_EQ(s["turns"][0]["hacking_rate"], 0.5);
  EXPECT_DOUBLE_EQ(s["hacking_ratio_samples"], 0.5);
  EXPECT_DOUBLE_EQ(s["turns"][0]["correctness_rate"], 0.5);
}

}  // namespace
}  // namespace kgym::grade
