#include "train/train_batch.h"

#include <gtest/gtest.h>

#include "train/test_records.h"

namespace kgym::train {
namespace {

using testing::Record;
using testing::TurnSpec;

TEST(TrainBatch, RowsFollowTheTurnRowLayout) {
  // Records arrive out of order; rows come out by (prompt, sample, turn).
  std::vector<nlohmann::json> recs = {
      Record("b", 1, {{.reward = 0.5}}),
      Record("a", 0, {{.reward = 1.0, .correct = true, .speedup = 2.0, .coverage = 0.8}, {.reward = 0.0}}),
      Record("b", 0, {{.reward = 2.0, .logprobs = {-0.1}}}, "llm_error"),
      Record("a", 1, {{.abnormal = true}}),
  };
  TrainBatch b;
  Status s = BuildTrainBatch(recs, {"a", "b"}, 2, "time_coverage", &b);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(b.rows.size(), 5u);
  EXPECT_EQ(b.num_groups, 2);
  EXPECT_EQ(b.trajectories, 4);
  EXPECT_EQ(b.failed_trajectories, 1);
  const std::vector<int64_t> traj = {0, 0, 1, 2, 3}, uid = {0, 0, 0, 1, 1}, turn = {1, 2, 1, 1, 1};
  for (size_t i = 0; i < b.rows.size(); ++i) {
    EXPECT_EQ(b.rows[i].traj, traj[i]) << i;
    EXPECT_EQ(b.rows[i].uid, uid[i]) << i;
    EXPECT_EQ(b.rows[i].turn, turn[i]) << i;
  }
  const TurnRow& first = b.rows[0];
  EXPECT_DOUBLE_EQ(first.reward, 1.0);
  EXPECT_EQ(first.correct, 1);
  EXPECT_DOUBLE_EQ(first.coverage, 0.8);
  EXPECT_DOUBLE_EQ(first.speedup, 2.0);
  EXPECT_EQ(first.response_ids.size(), 3u);
  EXPECT_EQ(first.rollout_logprobs, (std::vector<double>{-0.5, -1.0, -0.25}));
  EXPECT_EQ(first.prompt_ids, (std::vector<int64_t>{1, 2, 3, 1}));
  EXPECT_EQ(b.rows[2].loss_mask, 0);  // no verdict (abnormal evaluation)
  EXPECT_EQ(b.rows[3].loss_mask, 0);  // the trajectory ended with an error
  EXPECT_EQ(b.rows[4].loss_mask, 1);
}

TEST(TrainBatch, RefusesRowsWithoutTheEnginesTokens) {
  auto rec = Record("a", 0, {{.reward = 1.0}});
  rec["turns"][0].erase("token_ids");
  TrainBatch b;
  Status s = BuildTrainBatch({rec}, {"a"}, 1, "time_coverage", &b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("return_token_ids"), std::string::npos);

  rec = Record("a", 0, {{.reward = 1.0}});
  rec["turns"][0]["logprobs"]["content"].erase(0);
  s = BuildTrainBatch({rec}, {"a"}, 1, "time_coverage", &b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 log-probs for 3 tokens"), std::string::npos);

  EXPECT_FALSE(BuildTrainBatch({Record("z", 0, {{}})}, {"a"}, 1, "time_coverage", &b).ok());  // unknown prompt
  EXPECT_FALSE(BuildTrainBatch({Record("a", 3, {{}})}, {"a"}, 2, "time_coverage", &b).ok());  // sample >= n
}

}  // namespace
}  // namespace kgym::train
