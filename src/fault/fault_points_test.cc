#include "fault/fault_points.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <set>

namespace kgym::fault {
namespace {

class FaultPointsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    Disarm();
    ::unsetenv("KGYM_FAULTS_DIR");
  }
};

TEST_F(FaultPointsTest, UnarmedNeverFires) {
  Disarm();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(Hit("store.insert"));
  EXPECT_EQ(FiredCount("store.insert"), 0);
}

TEST_F(FaultPointsTest, FiresOnTheNthHitOnlyWithItsMode) {
  ASSERT_EQ(Arm("store.insert@3:busy"), "");
  EXPECT_FALSE(Hit("store.insert"));
  EXPECT_FALSE(Hit("store.update"));  // another point's hits do not count
  EXPECT_FALSE(Hit("store.insert"));
  auto f = Hit("store.insert");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->mode, "busy");
  EXPECT_EQ(f->hit, 3);
  EXPECT_FALSE(Hit("store.insert"));
  EXPECT_EQ(FiredCount("store.insert"), 1);
}

TEST_F(FaultPointsTest, CountsAndTheDefaultMode) {
  ASSERT_EQ(Arm("redis.command@2*3,memfd.map"), "");
  std::vector<bool> fired;
  for (int i = 0; i < 6; ++i) fired.push_back(Hit("redis.command").has_value());
  EXPECT_EQ(fired, (std::vector<bool>{false, true, true, true, false, false}));
  auto f = Hit("memfd.map");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->mode, "enomem");                // the first mode listed
  ASSERT_EQ(Arm("redis.lease@2*0:drop"), "");  // every hit from the second on
  EXPECT_FALSE(Hit("redis.lease"));
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(Hit("redis.lease"));
}

TEST_F(FaultPointsTest, AScopeCountsOnlyItsOwnHits) {
  ASSERT_EQ(Arm("channel.read/candidate@2:eof"), "");
  EXPECT_FALSE(Hit("channel.read", "reference"));
  EXPECT_FALSE(Hit("channel.read", "candidate"));
  EXPECT_FALSE(Hit("channel.read", "reference"));
  auto f = Hit("channel.read", "candidate");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->mode, "eof");
  EXPECT_EQ(FiredCount("channel.read"), 1);
  ASSERT_EQ(Arm("channel.read@2"), "");  // no scope: every hit counts
  EXPECT_FALSE(Hit("channel.read", "reference"));
  EXPECT_TRUE(Hit("channel.read", "candidate"));
}

TEST_F(FaultPointsTest, RefusesUnknownPointsAndModesWhole) {
  EXPECT_NE(Arm("store.insert@1,store.insret@2").find("unknown fault point 'store.insret'"), std::string::npos);
  EXPECT_FALSE(Hit("store.insert"));  // nothing of a refused spec is armed
  EXPECT_NE(Arm("store.insert:explode").find("no mode 'explode'"), std::string::npos);
  EXPECT_NE(Arm("store.insert@0").find("bad hit number"), std::string::npos);
  EXPECT_NE(Arm("store.insert@x").find("bad hit number"), std::string::npos);
  EXPECT_NE(Arm("store.insert*").find("bad count"), std::string::npos);
}

TEST_F(FaultPointsTest, MarkerDirectoryFiresAnEntryInOneProcessOnly) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kgym-faults-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::setenv("KGYM_FAULTS_DIR", dir.c_str(), 1);
  ASSERT_EQ(Arm("zygote.fork@1*2:die"), "");
  EXPECT_TRUE(Hit("zygote.fork"));
  EXPECT_TRUE(std::filesystem::exists(dir / "zygote.fork@1"));
  EXPECT_TRUE(Hit("zygote.fork"));  // the process that made the marker fires the rest of its count
  // A process armed afterwards (a restarted server) skips the entry.
  ASSERT_EQ(Arm("zygote.fork@1*2:die"), "");
  EXPECT_FALSE(Hit("zygote.fork"));
  // A process armed before the marker was made (a second process of the same test) lets it go when it would fire.
  std::filesystem::remove(dir / "zygote.fork@1");
  ASSERT_EQ(Arm("zygote.fork@1"), "");
  std::filesystem::create_directories(dir);
  FILE* f = std::fopen((dir / "zygote.fork@1").c_str(), "w");
  std::fclose(f);
  EXPECT_FALSE(Hit("zygote.fork"));
  std::filesystem::remove_all(dir);
}

TEST_F(FaultPointsTest, EveryPointIsNamedOnceWithModesAndADescription) {
  std::set<std::string> names;
  for (const auto& p : Points()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_GT(std::string(p.modes).size(), 0u) << p.name;
    EXPECT_GT(std::string(p.what).size(), 20u) << p.name;
  }
  EXPECT_GE(names.size(), 18u);
}

}  // namespace
}  // namespace kgym::fault
