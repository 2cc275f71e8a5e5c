#include "agent/run_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kgym::agent {
namespace {

std::string TempDir() {
  std::string d =
      std::filesystem::temp_directory_path() / ("kgym-rundir-" + std::to_string(getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(d);
  return d;
}

TEST(RunDirTest, AppendReopenAndTornTail) {
  std::string d = TempDir();
  {
    RunDir r;
    ASSERT_TRUE(RunDir::Open(d, &r).ok());
    ASSERT_TRUE(r.Append({{"key", "a#0"}, {"v", 1}}).ok());
    ASSERT_TRUE(r.Append({{"key", "a#1"}, {"v", 2}}).ok());
  }
  { std::ofstream(d + "/trajectories.jsonl", std::ios::app) << "{\"key\": \"a#2\", \"v\""; }  // killed mid-write
  RunDir r;
  ASSERT_TRUE(RunDir::Open(d, &r).ok());
  EXPECT_EQ(r.records().size(), 2u);
  EXPECT_EQ(r.torn_lines_dropped(), 1);
  EXPECT_FALSE(r.Has("a#2"));
  ASSERT_TRUE(r.Append({{"key", "a#0"}, {"v", 3}}).ok());  // a later record of a key wins
  std::vector<nlohmann::json> recs;
  ASSERT_TRUE(LoadTrajectories(d, &recs).ok());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["v"], 3);
  std::filesystem::remove_all(d);
}

TEST(RunDirTest, ConfigMustMatchOnResume) {
  std::string d = TempDir();
  RunDir r;
  ASSERT_TRUE(RunDir::Open(d, &r).ok());
  ASSERT_TRUE(r.CheckOrWriteConfig({{"model", "a"}, {"turns", 3}}, {"model", "turns"}).ok());
  EXPECT_TRUE(r.CheckOrWriteConfig({{"model", "a"}, {"turns", 3}, {"x", 1}}, {"model", "turns"}).ok());
  Status s = r.CheckOrWriteConfig({{"model", "a"}, {"turns", 5}}, {"model", "turns"});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("turns"), std::string::npos);
  std::filesystem::remove_all(d);
}

}  // namespace
}  // namespace kgym::agent
