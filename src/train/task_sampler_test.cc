#include "train/task_sampler.h"

#include <gtest/gtest.h>

#include <set>

namespace kgym::train {
namespace {

TEST(TaskSampler, EpochsArePermutationsAndStepsArePure) {
  TaskSampler s(10, 4, 42, true);
  std::multiset<size_t> seen;
  // Steps 0..4 cover 20 positions = two epochs: every task exactly twice.
  for (int64_t step = 0; step < 5; ++step)
    for (size_t i : s.Step(step)) seen.insert(i);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(seen.count(i), 2u) << i;
  EXPECT_EQ(s.Step(3), TaskSampler(10, 4, 42, true).Step(3));  // a resumed run sees the same prompts
  EXPECT_NE(s.Step(0), TaskSampler(10, 4, 43, true).Step(0));
  const std::vector<size_t> step0 = s.Step(0);
  std::set<size_t> first(step0.begin(), step0.end());
  EXPECT_EQ(first.size(), 4u);
  EXPECT_EQ(TaskSampler(3, 3, 1, false).Step(7), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(s.EpochOf(2), 0);
  EXPECT_EQ(s.EpochOf(3), 1);
}

}  // namespace
}  // namespace kgym::train
