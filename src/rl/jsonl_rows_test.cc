#include "rl/jsonl_rows.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kgym::rl {
namespace {

using nlohmann::json;

JsonRows Parse(const std::string& text) {
  std::istringstream in(text);
  JsonRows rows;
  Status s = ReadJsonLines(in, &rows);
  EXPECT_TRUE(s.ok()) << s.message();
  return rows;
}

TEST(JsonlRows, AdvantagesInAnyRowOrder) {
  // Rows shuffled; traj "b" turn 2 comes before its turn 1.
  JsonRows rows = Parse(R"({"uid":"p","traj":"b","turn":2,"reward":1.0}
{"uid":"p","traj":"a","turn":1,"reward":1.0,"loss_mask":1}

{"uid":"p","traj":"b","turn":1,"reward":0.0}
{"uid":"p","traj":"a","turn":2,"reward":0.0,"loss_mask":0}
)");
  ASSERT_EQ(rows.size(), 4u);
  AdvantageOptions opt;
  ASSERT_TRUE(RunAdvantages(&rows, opt, false).ok());
  EXPECT_DOUBLE_EQ(rows[0]["return"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows[2]["return"].get<double>(), 1.0);  // b: 0 + 1
  EXPECT_DOUBLE_EQ(rows[1]["return"].get<double>(), 1.0);  // a: 1 + masked 0
  // turn 1 group {1, 1}: ties -> 0; turn 2 group {b} alone (a masked) -> A = G.
  EXPECT_NEAR(rows[1]["advantage"].get<double>(), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(rows[0]["advantage"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows[3]["advantage"].get<double>(), 0.0);
  EXPECT_EQ(rows[0]["uid"], "p");  // input fields kept
}

TEST(JsonlRows, VoidTurnsRewriteTheMask) {
  JsonRows rows = Parse(R"({"uid":1,"traj":1,"turn":1,"reward":1.0}
{"uid":1,"traj":1,"turn":2,"reward":0.0})");
  ASSERT_TRUE(RunAdvantages(&rows, {}, true).ok());
  EXPECT_EQ(rows[1]["loss_mask"], 0);
  EXPECT_EQ(rows[1]["advantage"], 0.0);
}

TEST(JsonlRows, ErrorsNameRowAndField) {
  JsonRows rows = Parse(R"({"uid":"p","traj":"a","turn":1}
)");
  Status s = RunAdvantages(&rows, {}, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("row 1, field \"reward\""), std::string::npos);
  rows = Parse(R"({"uid":"p","traj":"a","turn":1,"reward":1}
{"uid":"q","traj":"a","turn":2,"reward":1})");
  s = RunAdvantages(&rows, {}, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("two uids"), std::string::npos);
  rows = Parse(R"({"uid":"p","traj":"a","turn":1,"reward":1}
{"uid":"p","traj":"a","turn":1,"reward":1})");
  EXPECT_FALSE(RunAdvantages(&rows, {}, false).ok());
  std::istringstream bad("{\"a\":1}\n[1,2]\n");
  JsonRows r2;
  s = ReadJsonLines(bad, &r2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2"), std::string::npos);
}

TEST(JsonlRows, MismatchAndPrsAndFilterAndReward) {
  JsonRows m = Parse(R"({"traj":"t","turn":1,"logp_train":[-1.0,-2.0],"logp_rollout":[-1.0,-2.0]}
{"traj":"t","turn":2,"logp_train":[-1.0],"logp_rollout":[-1.5]}
{"traj":"u","turn":1,"logp_train":[-1.0],"logp_rollout":[-1.0005]})");
  ASSERT_TRUE(RunMismatch(&m, {}).ok());
  EXPECT_EQ(m[0]["keep"], 0);  // geometric mean 0.5/3 over traj t
  EXPECT_EQ(m[1]["keep"], 0);
  EXPECT_EQ(m[2]["keep"], 1);
  EXPECT_NEAR(m[2]["ratio"].get<double>(), std::exp(0.0005), 1e-12);

  JsonRows p = Parse(R"({"coverage":0.35,"correct":true}
{"coverage":0.1,"correct":0})");
  ASSERT_TRUE(RunProfilingRejection(&p, {}).ok());
  EXPECT_NEAR(p[0]["keep_prob"].get<double>(), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(p[1]["keep_prob"].get<double>(), 1.0);
  EXPECT_EQ(p[1]["keep"], 1);

  JsonRows f = Parse(R"({"uid":"x","traj":1,"turn":1,"reward":1}
{"uid":"x","traj":2,"turn":1,"reward":1}
{"uid":"y","traj":3,"turn":1,"reward":1}
{"uid":"y","traj":4,"turn":1,"reward":0})");
  ASSERT_TRUE(RunGroupFilter(&f, {}).ok());
  EXPECT_EQ(f[0]["group_keep"], 0);
  EXPECT_EQ(f[3]["group_keep"], 1);

  JsonRows r = Parse(R"({"status":"completed","correctness":true,"compiled":true,"speedup":2.0})");
  RewardConfig cfg;
  ASSERT_TRUE(RunReward(&r, cfg).ok());
  EXPECT_DOUBLE_EQ(r[0]["reward"].get<double>(), 1.5);
  EXPECT_TRUE(r[0]["reward_detail"]["success"].get<bool>());
}

}  // namespace
}  // namespace kgym::rl
