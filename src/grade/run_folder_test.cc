#include "grade/run_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "grade/leaderboard.h"

namespace kgym::grade {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class RunFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kgym-run-folder-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }
  std::string path() const { return dir_.string(); }
  fs::path dir_;
};

json Traj(const std::string& key, const std::string& task, double speedup, const std::string& outcome = "correct",
          const std::string& detail = "") {
  json result = {{"compiled", true},
                 {"correctness", outcome == "correct"},
                 {"speedup", speedup},
                 {"outcome", outcome},
                 {"outcome_detail", detail}};
  return {{"key", key},
          {"task_id", task},
          {"level", "1"},
          {"status", "done"},
          {"turns", {{{"turn", 1}, {"reward", 0.5}, {"result", result}}}}};
}

TEST_F(RunFolderTest, TruncatedAndBadLinesBecomeWarningsAndTheRestIsRead) {
  Write("trajectories.jsonl", Traj("a#0", "a", 1.5).dump() + "\nnot json\n" + Traj("b#0", "b", 2).dump() +
                                  "\n{\"key\": \"c#0\", \"task_id\"");
  RunFolder run;
  ASSERT_TRUE(OpenRunFolder(path(), &run).ok());
  EXPECT_EQ(run.kind, "agent");
  EXPECT_EQ(run.sources, std::vector<std::string>{"trajectories"});
  json data;
  ASSERT_TRUE(RunReportData(run, "", {}, &data).ok());
  EXPECT_EQ(data["grade"]["overall"]["num_samples"], 2);
  const auto& w = data["run"]["warnings"];
  ASSERT_EQ(w.size(), 2u) << w.dump();
  EXPECT_NE(w[0].get<std::string>().find("line 2 is not a JSON object"), std::string::npos);
  EXPECT_NE(w[1].get<std::string>().find("line 4 is cut off"), std::string::npos);
  EXPECT_EQ(data["leaderboard"][0]["task_id"], "b");  // best speedup first
}

TEST_F(RunFolderTest, TrainingRunHasMetricGroupsAndStepSources) {
  Write("config.json", R"({"algo": "trloo"})");
  Write("metrics.jsonl", R"({"step": 1, "time": "2026-12-04T10:00:00Z", "reward/mean": 0.1, "mrs/keep_frac": 0.9})"
                         "\n"
                         R"({"step": 2, "reward/mean": 0.2, "val/fast@1.2": 0.05, "note": "text"})"
                         "\n"
                         R"({"no_step": 1})"
                         "\n");
  Write("rollouts/step_2/trajectories.jsonl", Traj("a#0", "a", 1.0).dump() + "\n");
  Write("rollouts/step_10/trajectories.jsonl", Traj("a#0", "a", 1.1).dump() + "\n");
  Write("val/step_2/trajectories.jsonl", Traj("a#0", "a", 1.3).dump() + "\n");
  Write("val/step_x/trajectories.jsonl", "\n");  // not a step folder
  RunFolder run;
  ASSERT_TRUE(OpenRunFolder(path(), &run).ok());
  EXPECT_EQ(run.kind, "training");
  EXPECT_EQ(run.sources, (std::vector<std::string>{"rollouts/step_2", "rollouts/step_10", "val/step_2"}));
  EXPECT_EQ(DefaultSource(run), "val/step_2");
  json data;
  ASSERT_TRUE(RunReportData(run, "rollouts/step_10", {}, &data).ok());
  EXPECT_EQ(data["run"]["source"], "rollouts/step_10");
  EXPECT_EQ(data["run"]["config"]["algo"], "trloo");
  const auto& m = data["metrics"];
  EXPECT_EQ(m["rows"].size(), 2u);
  EXPECT_EQ(m["keys"], json({"mrs/keep_frac", "reward/mean", "val/fast@1.2"}));  // "note" is not numeric
  EXPECT_EQ(m["groups"]["reward"], json({"reward/mean"}));
  EXPECT_EQ(m["groups"]["val"], json({"val/fast@1.2"}));
  EXPECT_EQ(m["rows"][0]["time"], "2026-12-04T10:00:00Z");
  ASSERT_EQ(data["run"]["warnings"].size(), 1u);
  json bad;
  EXPECT_EQ(RunReportData(run, "../../etc", {}, &bad).code(), Status::Code::kInvalidArgument);
}

TEST_F(RunFolderTest, AFolderWithoutRunFilesIsNotARun) {
  Write("notes.txt", "x");
  RunFolder run;
  EXPECT_EQ(OpenRunFolder(path(), &run).code(), Status::Code::kNotFound);
}

TEST(Leaderboard, CountsHackFamiliesAndBestTurns) {
  std::vector<json> t = {Traj("a#0", "a", 1.2), Traj("a#1", "a", 0, "hacked", "hacked (caching): slow on fresh"),
                         Traj("b#0", "b", 0, "hacked", "hacked (caching): x"),
                         Traj("c#0", "c", 0, "hacked", "weird detail")};
  json fam = HackFamilies(t);
  EXPECT_EQ(fam, json({{"caching", 2}, {"unnamed", 1}}));
  json lb = Leaderboard(t);
  ASSERT_EQ(lb.size(), 3u);
  EXPECT_EQ(lb[0]["task_id"], "a");
  EXPECT_EQ(lb[0]["samples"], 2);
  EXPECT_EQ(lb[0]["correct_samples"], 1);
  EXPECT_EQ(lb[0]["best_turn"], 1);
  EXPECT_EQ(lb[0]["hacked_turns"], 1);
  EXPECT_TRUE(lb[1]["best_turn"].is_null());
}

}  // namespace
}  // namespace kgym::grade
