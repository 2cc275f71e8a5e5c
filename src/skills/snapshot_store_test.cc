#include "skills/snapshot_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kgym::skills {
namespace {
namespace fs = std::filesystem;

class SnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kgym_skills_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static SkillRecord Skill(const std::string& name) {
    SkillRecord s;
    s.name = name;
    s.description = "d " + name;
    s.content = "## Motivation\n" + name;
    return s;
  }
  fs::path dir_;
};

TEST_F(SnapshotStoreTest, LoadsNewestStepAtOrBelowBound) {
  ASSERT_TRUE(WriteSnapshot(dir_, 0, {}).ok());
  ASSERT_TRUE(WriteSnapshot(dir_, 3, {Skill("a")}).ok());
  ASSERT_TRUE(WriteSnapshot(dir_, 10, {Skill("a"), Skill("b")}).ok());
  std::ofstream(dir_ / "global_step_7.jsonl.tmp.1") << "garbage";  // never read
  LoadedSnapshot s;
  ASSERT_TRUE(LoadSnapshot(dir_, -1, &s).ok());
  EXPECT_EQ(s.step, 10);
  EXPECT_EQ(s.skills.size(), 2u);
  ASSERT_TRUE(LoadSnapshot(dir_, 9, &s).ok());
  EXPECT_EQ(s.step, 3);
  ASSERT_TRUE(LoadSnapshot(dir_, 2, &s).ok());
  EXPECT_EQ(s.step, 0);
  EXPECT_TRUE(s.skills.empty());
  ASSERT_TRUE(LoadForStep(dir_, 12, 5, &s).ok());
  EXPECT_EQ(s.step, 3);
  ASSERT_TRUE(LoadSnapshot(dir_ / "missing", -1, &s).ok());
  EXPECT_EQ(s.step, -1);
}

TEST_F(SnapshotStoreTest, SkipsBadLinesAndKeepsFirstOfDuplicateNames) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "global_step_1.jsonl")
      << Skill("a").ToJson().dump() << "\nnot json\n{\"name\": \"x\"}\n"
      << Skill("b").ToJson().dump() << "\n"
      << nlohmann::json{{"name", "a"}, {"description", "second"}, {"scope", "general"}, {"content", "c"}}.dump()
      << "\n";
  LoadedSnapshot s;
  ASSERT_TRUE(LoadSnapshot(dir_, -1, &s).ok());
  ASSERT_EQ(s.skills.size(), 2u);
  EXPECT_EQ(s.skills[0].description, "d a");
  EXPECT_EQ(s.skipped_lines, 2);
  EXPECT_EQ(s.duplicate_names, 1);
}

TEST_F(SnapshotStoreTest, InvalidWriteChangesNothing) {
  ASSERT_TRUE(WriteSnapshot(dir_, 1, {Skill("a")}).ok());
  auto bad = Skill("b");
  bad.scope = "nowhere";
  Status st = WriteSnapshot(dir_, 1, {Skill("a"), bad});
  EXPECT_NE(st.message().find("'scope'"), std::string::npos);
  st = WriteSnapshot(dir_, 2, {Skill("a"), Skill("a")});
  EXPECT_NE(st.message().find("'name'"), std::string::npos);
  std::vector<int64_t> steps;
  ASSERT_TRUE(ListSnapshotSteps(dir_, &steps).ok());
  EXPECT_EQ(steps, std::vector<int64_t>{1});
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temp file left
  LoadedSnapshot s;
  ASSERT_TRUE(LoadSnapshot(dir_, -1, &s).ok());
  EXPECT_EQ(s.skills.size(), 1u);
}

}  // namespace
}  // namespace kgym::skills
