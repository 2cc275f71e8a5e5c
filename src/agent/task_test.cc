#include "agent/task.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kgym::agent {
namespace {

namespace fs = std::filesystem;

TEST(TaskTest, LoadsKernelBenchFolderSkippingSolutions) {
  fs::path d = fs::temp_directory_path() / ("kgym-tasks-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d / "level1");
  fs::create_directories(d / "level2");
  fs::create_directories(d / "solutions/level1");
  std::ofstream(d / "level1/19_ReLU.py") << "class Model:\n    pass\n";
  std::ofstream(d / "level2/3_Fused.py") << "class Model:\n    pass\n";
  std::ofstream(d / "level1/helpers.py") << "def f(): pass\n";
  std::ofstream(d / "solutions/level1/19_ReLU_torch.py") << "class ModelNew:\n    pass\nclass Model: pass\n";
  std::vector<Task> tasks;
  ASSERT_TRUE(LoadTasks(d.string(), &tasks).ok());
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].id, "level1/19_ReLU");
  EXPECT_EQ(tasks[0].level, "1");
  EXPECT_EQ(tasks[0].problem_id, 19);
  EXPECT_EQ(tasks[1].name, "3_Fused");
  fs::remove_all(d);
}

TEST(TaskTest, DrKernelRowFields) {
  nlohmann::json row = {{"data_source", "kernelbench_level2_validation"},
                        {"prompt", {{{"role", "user"}, {"content", "P"}}}},
                        {"reward_model", {{"ground_truth", "class Model: pass"}, {"style", "rule"}}},
                        {"extra_info", {{"difficulty", nullptr}, {"name", "5_Conv"}, {"problem_id", 5}}}};
  Task t;
  ASSERT_TRUE(Task::FromJson(row, &t).ok());
  EXPECT_EQ(t.reference_code, "class Model: pass");
  EXPECT_EQ(t.problem_id, 5);
  EXPECT_EQ(t.id, "5");
  EXPECT_EQ(t.name, "5_Conv");
  EXPECT_EQ(t.prompt[0]["content"], "P");
  Task back;
  ASSERT_TRUE(Task::FromJson(t.ToJson(), &back).ok());
  EXPECT_EQ(back.id, t.id);
  Status s = Task::FromJson({{"name", "x"}}, &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("reference_code"), std::string::npos);
}

TEST(TaskTest, ProblemIdFromName) {
  EXPECT_EQ(ProblemIdFromName("100_HingeLoss"), 100);
  EXPECT_EQ(ProblemIdFromName("relu"), -1);
}

}  // namespace
}  // namespace kgym::agent
