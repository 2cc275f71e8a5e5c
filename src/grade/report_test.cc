#include "grade/report.h"

#include <gtest/gtest.h>

#include "grade/run_folder.h"

namespace kgym::grade {
namespace {

using nlohmann::json;

std::vector<json> TwoSamples() {
  auto turn = [](int n, double s) {
    return json{{"turn", n},
                {"reward", 0.5 + 0.5 * s},
                {"result", {{"compiled", true}, {"correctness", true}, {"speedup", s}}}};
  };
  return {{{"key", "a#0"}, {"task_id", "a|b"}, {"level", "1"}, {"turns", {turn(1, 1.0), turn(2, 1.25)}}},
          {{"key", "a#1"}, {"task_id", "a|b"}, {"level", "1"}, {"turns", {turn(1, 0.5), turn(2, 2.0)}}}};
}

json Data(const std::vector<json>& trajectories) {
  json d = TrajectoryReport(trajectories, {});
  d["metrics"] = nullptr;
  d["run"] = {{"source", "trajectories"}, {"warnings", {"trajectories.jsonl: line 3 is cut off"}}};
  return d;
}

TEST(ReportTest, MarkdownHasTurnRowsLeaderboardAndWarnings) {
  std::string md = MarkdownReport(Data(TwoSamples()), "run <x>");
  EXPECT_NE(md.find("# run <x>"), std::string::npos);
  // Turn 2: both correct; Fast@1 = 100%, Fast@1.2 = 100%, Fast@1.5 = 50%, Fast@2 = 50%, Fast@3 = 0%.
  EXPECT_NE(md.find("| 2 | 2 | 100.0 | 100.0 | 100.0 | 100.0 | 50.0 | 50.0 | 0.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("> **Warning:** trajectories.jsonl: line 3 is cut off"), std::string::npos);
  // The leaderboard row: a '|' in a task id is escaped so the table keeps its columns.
  EXPECT_NE(md.find("| a\\|b | 1 | 2 | 2 | 2.000 | 2 |"), std::string::npos) << md;
}

TEST(ReportTest, MarkdownOfATrainingRunListsTheLastValueOfEachMetric) {
  std::vector<std::string> warnings;
  json d = {{"grade", nullptr},
            {"metrics", MetricsTable({{{"step", 1}, {"reward/mean", 0.25}},
                                      {{"step", 2}, {"reward/mean", 0.5}},
                                      {{"step", 3}, {"train/loss", 1.5}}},
                                     &warnings)},
            {"run", {{"source", ""}, {"warnings", json::array()}}}};
  std::string md = MarkdownReport(d, "t");
  EXPECT_NE(md.find("| reward/mean | 2 | 0.5 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| train/loss | 3 | 1.5 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("Per turn"), std::string::npos);
}

}  // namespace
}  // namespace kgym::grade
