#include "train/run_resume.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kgym::train {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class RunResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kgym-resume-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    for (int s : {1, 2, 3}) {
      Write(dir_ / "rollouts" / ("step_" + std::to_string(s)) / "trajectories.jsonl", "{}\n");
      Write(dir_ / "val" / ("step_" + std::to_string(s)) / "grade.json", "{}\n");
    }
    Write(dir_ / "checkpoints/step_2/kgym_state.json", R"({"step": 2})");
    Write(dir_ / "checkpoints/step_2/trainer_state.json", "{}");
    Write(dir_ / "checkpoints/step_3/kgym_state.json", R"({"step": 3})");  // the learner's half never written
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunResumeTest, TheNewestCompleteCheckpointAndItsStep) {
  const std::string ckpt = NewestCheckpoint(dir_.string());
  EXPECT_EQ(fs::path(ckpt).filename(), "step_2");
  int64_t step = -1;
  ASSERT_TRUE(CheckpointStep(ckpt, &step).ok());
  EXPECT_EQ(step, 2);
  EXPECT_FALSE(CheckpointStep((dir_ / "rollouts").string(), &step).ok());
}

TEST_F(RunResumeTest, WhatLaterStepsLeftIsDroppedOnce) {
  Write(dir_ / "metrics.jsonl",
        "{\"step\": 0, \"val/x\": 1}\n{\"step\": 1, \"a\": 1}\n{\"step\": 2, \"a\": 2}\n{\"step\": 3, \"a\": 3}\n"
        "{\"step\": 3, \"a\"");  // the last line cut off by a killed writer
  ASSERT_TRUE(ForgetStepsAfter(dir_.string(), 2).ok());
  EXPECT_EQ(Read(dir_ / "metrics.jsonl"),
            "{\"step\": 0, \"val/x\": 1}\n{\"step\": 1, \"a\": 1}\n{\"step\": 2, \"a\": 2}\n");
  EXPECT_TRUE(fs::exists(dir_ / "rollouts/step_2"));
  EXPECT_FALSE(fs::exists(dir_ / "rollouts/step_3"));
  EXPECT_FALSE(fs::exists(dir_ / "val/step_3"));
  ASSERT_TRUE(ForgetStepsAfter(dir_.string(), -1).ok());  // no checkpoint: everything is done again
  EXPECT_EQ(Read(dir_ / "metrics.jsonl"), "");
  EXPECT_FALSE(fs::exists(dir_ / "rollouts/step_1"));
}

}  // namespace
}  // namespace kgym::train
