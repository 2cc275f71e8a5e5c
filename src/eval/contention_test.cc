#include "eval/contention.h"

#include <gtest/gtest.h>

#include <vector>

namespace kgym {
namespace {

std::vector<int> Rotation(int n, int sets) {
  std::vector<int> s;
  for (int i = 0; i < n; ++i) s.push_back(i % sets);
  return s;
}

TEST(ContentionTest, SteadyCallsShareNothing) {
  std::vector<double> busy;
  for (int i = 0; i < 20; ++i) busy.push_back(2.73 * (1 + 0.005 * (i % 3)));
  std::vector<double> least;
  SharedCalls s = FindSharedCalls(busy, Rotation(20, 4), &least);
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(s.clean);
  EXPECT_EQ(least.size(), 4u);
}

TEST(ContentionTest, ADataDependentKernelIsNotContention) {
  // Set 1's inputs take 30 % longer, every time: its own baseline, not the others'.
  std::vector<double> busy;
  for (int i = 0; i < 20; ++i) busy.push_back(i % 2 ? 1.3 : 1.0);
  std::vector<double> least;
  EXPECT_EQ(FindSharedCalls(busy, Rotation(20, 2), &least).count, 0);
}

TEST(ContentionTest, CallsStretchedByAnotherContextAreShared) {
  // The victim: 2.73 ms alone; beside a GPU-heavy neighbour some calls took 5.49 and 8.19 ms.
  std::vector<double> busy(20, 2.73);
  busy[5] = 5.49;
  busy[9] = 8.19;
  std::vector<double> least;
  SharedCalls s = FindSharedCalls(busy, Rotation(20, 4), &least);
  EXPECT_EQ(s.count, 2);
  EXPECT_TRUE(s.shared[5] && s.shared[9]);
  EXPECT_TRUE(s.clean);  // 2 of 20: left out, the rest reported
  EXPECT_EQ(Unshared(busy, s), std::vector<double>(18, 2.73));
  // A third of the calls: the attempt is timed again.
  for (int i = 10; i < 16; ++i) busy[i] = 4.0;
  EXPECT_FALSE(FindSharedCalls(busy, Rotation(20, 4), &least).clean);
}

TEST(ContentionTest, ASetMetOnceIsJudgedAgainstTheAttempt) {
  std::vector<double> busy(13, 1.0);
  busy[7] = 2.0;
  std::vector<double> least;
  SharedCalls s = FindSharedCalls(busy, Rotation(13, 13), &least);
  EXPECT_EQ(s.count, 1);
  EXPECT_TRUE(s.shared[7]);
  // 20 % above the others is within an unknown set's room (its data may cost more).
  busy[7] = 1.2;
  std::vector<double> least2;
  EXPECT_EQ(FindSharedCalls(busy, Rotation(13, 13), &least2).count, 0);
}

TEST(ContentionTest, AnAttemptStretchedThroughoutIsSeenAgainstTheNextOnes) {
  // Every call of the first attempt met the neighbour (all ~2x): nothing stands out within it ...
  std::vector<double> first(20, 5.5), second(20, 2.73);
  std::vector<double> least;
  EXPECT_EQ(FindSharedCalls(first, Rotation(20, 4), &least).count, 0);
  // ... but the sets' least times carry over: a later stretched call is seen against the clean attempt's.
  EXPECT_EQ(FindSharedCalls(second, Rotation(20, 4), &least).count, 0);
  EXPECT_EQ(FindSharedCalls(first, Rotation(20, 4), &least).count, 20);
}

TEST(ContentionTest, IdleNullBound) {
  EXPECT_DOUBLE_EQ(IdleNullBound(0.1), 0.35);
  EXPECT_DOUBLE_EQ(IdleNullBound(0.4), 0.8);
  EXPECT_DOUBLE_EQ(IdleNullBound(-1), 0.6);
}

}  // namespace
}  // namespace kgym
