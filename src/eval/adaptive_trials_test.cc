#include "eval/adaptive_trials.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace kgym {
namespace {

TEST(MedianIntervalTest, RanksFromTheBinomial) {
  // Below 6 samples no pair of order statistics reaches 95 %: [x(1), x(5)] of 5 covers 1 - 2/32 = 93.75 %.
  EXPECT_EQ(MedianIntervalRank(5), -1);
  EXPECT_EQ(MedianIntervalRank(6), 0);     // [x(1), x(6)]: 1 - 2/64 = 96.9 %
  EXPECT_EQ(MedianIntervalRank(10), 1);    // [x(2), x(9)]: 97.9 % ([x(3), x(8)] would be 89 %)
  EXPECT_EQ(MedianIntervalRank(20), 5);    // [x(6), x(15)]: 95.9 %
  EXPECT_EQ(MedianIntervalRank(100), 39);  // [x(40), x(61)]: the textbook pair for n = 100
  EXPECT_EQ(MedianIntervalRank(0), -1);
  EXPECT_EQ(MedianIntervalRank(10, 1.0), -1);
}

TEST(MedianIntervalTest, IntervalOfSortedSamples) {
  std::vector<double> s = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};  // 1..10 shuffled
  MedianInterval ci = MedianConfidenceInterval(s);
  ASSERT_TRUE(ci.known);
  EXPECT_DOUBLE_EQ(ci.median, 5.5);
  EXPECT_DOUBLE_EQ(ci.lo, 2);
  EXPECT_DOUBLE_EQ(ci.hi, 9);
  EXPECT_NEAR(ci.RelativeHalfWidth(), 3.5 / 5.5, 1e-12);
  MedianInterval few = MedianConfidenceInterval({1, 2, 3});
  EXPECT_FALSE(few.known);
  EXPECT_DOUBLE_EQ(few.median, 2);
  EXPECT_EQ(few.RelativeHalfWidth(), -1);
}

// The interval covers the true median at least 95 % of the time whatever the distribution: a skewed one (lognormal)
// and a bimodal one (70 % of calls at 1.0, 30 % at 1.5: median 1.0 exactly).
TEST(MedianIntervalTest, CoversTheMedianWhateverTheDistribution) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lognormal(0.0, 0.5);  // median exp(0) = 1
  std::uniform_real_distribution<double> u(0, 1);
  for (int n : {6, 20, 37, 100}) {
    int covered_skewed = 0, covered_bimodal = 0;
    const int reps = 4000;
    for (int r = 0; r < reps; ++r) {
      std::vector<double> a, b;
      for (int i = 0; i < n; ++i) {
        a.push_back(lognormal(rng));
        b.push_back((u(rng) < 0.7 ? 1.0 : 1.5) + 1e-9 * u(rng));
      }
      MedianInterval ca = MedianConfidenceInterval(a), cb = MedianConfidenceInterval(b);
      covered_skewed += ca.lo <= 1.0 && 1.0 <= ca.hi;
      covered_bimodal += cb.lo <= 1.0 + 1e-9 && 1.0 <= cb.hi;
    }
    EXPECT_GE(covered_skewed, 0.94 * reps) << n;  // 0.95 less the simulation's own spread
    EXPECT_GE(covered_bimodal, 0.94 * reps) << n;
  }
}

TEST(StopRuleTest, NeverBeforeTheFloor) {
  StopRule rule;
  rule.floor = 20;
  std::vector<double> same(19, 2.73);
  EXPECT_FALSE(EnoughCalls(rule, same));  // a perfectly steady kernel still runs the floor
  same.push_back(2.73);
  EXPECT_TRUE(EnoughCalls(rule, same));
}

TEST(StopRuleTest, StopsWhenBothEndsAreWithinTheTarget) {
  StopRule rule;  // floor 20, 0.5 %
  std::vector<double> s;
  for (int i = 0; i < 20; ++i) s.push_back(100.0 + (i % 2 ? 0.4 : -0.4));  // +-0.4 %: inside
  EXPECT_TRUE(EnoughCalls(rule, s));
  std::vector<double> wide;
  for (int i = 0; i < 20; ++i) wide.push_back(100.0 + (i % 2 ? 1.0 : -1.0));  // +-1 %: outside
  EXPECT_FALSE(EnoughCalls(rule, wide));
  // One side is enough to keep going: an interval tight below and long above (a slow tail above the median).
  std::vector<double> tail(12, 100.0);
  for (int i = 0; i < 8; ++i) tail.push_back(103.0);
  EXPECT_FALSE(EnoughCalls(rule, tail));
}

// Simulated timed phases: the call at which the rule stops, against the configured 100.
int CallsUntilStop(double median_ms, double jitter, uint64_t seed, int ceiling = 100) {
  StopRule rule;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, jitter);
  std::vector<double> s;
  for (int i = 0; i < ceiling; ++i) {
    s.push_back(median_ms * (1 + noise(rng)));
    if (EnoughCalls(rule, s)) break;
  }
  return static_cast<int>(s.size());
}

TEST(StopRuleTest, SteadyKernelsStopEarlyNoisyOnesRunToTheCeiling) {
  // A 47 ms kernel with 0.5 % jitter: its median is known within 0.5 % long before 100 calls.
  for (uint64_t seed = 1; seed <= 5; ++seed) EXPECT_LE(CallsUntilStop(47.0, 0.005, seed), 40) << seed;
  // 0.2 % jitter: at the floor.
  EXPECT_EQ(CallsUntilStop(2.73, 0.002, 3), 20);
  // 10 % jitter (a tiny kernel behind a noisy host): never within 0.5 %, so the configured count runs.
  EXPECT_EQ(CallsUntilStop(0.05, 0.10, 4), 100);
}

}  // namespace
}  // namespace kgym
