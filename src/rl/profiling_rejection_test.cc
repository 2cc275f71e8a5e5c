#include "rl/profiling_rejection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace kgym::rl {
namespace {

struct Prs {
  std::vector<double> p;
  std::vector<uint8_t> keep;
};

Prs RunPrs(const std::vector<double>& cov, const std::vector<uint8_t>& correct, const PrsOptions& opt,
           const std::vector<double>* speedup = nullptr) {
  PrsInput in;
  in.size = cov.size();
  in.coverage = cov.data();
  in.correct = correct.data();
  in.speedup = speedup ? speedup->data() : nullptr;
  Prs r{std::vector<double>(cov.size()), std::vector<uint8_t>(cov.size())};
  Status s = ProfilingRejection(in, opt, r.p.data(), r.keep.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

TEST(Prs, SoftRampForCorrectTurnsOnly) {
  PrsOptions opt;
  Prs r = RunPrs({0.1, 0.3, 0.35, 0.4, 0.9, 0.0}, {1, 1, 1, 1, 1, 0}, opt);
  EXPECT_DOUBLE_EQ(r.p[0], 0.0);
  EXPECT_DOUBLE_EQ(r.p[1], 0.0);
  EXPECT_NEAR(r.p[2], 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(r.p[3], 1.0);
  EXPECT_DOUBLE_EQ(r.p[4], 1.0);
  EXPECT_DOUBLE_EQ(r.p[5], 1.0);  // incorrect: always kept
  EXPECT_EQ(r.keep[0], 0);
  EXPECT_EQ(r.keep[1], 0);
  EXPECT_EQ(r.keep[3], 1);
  EXPECT_EQ(r.keep[5], 1);
}

TEST(Prs, RoundsCoverageLikeTheCode) {
  PrsOptions opt;
  // 0.3449 rounds to 0.34 -> p = 0.4; unrounded it would be 0.449.
  EXPECT_NEAR(RunPrs({0.3449}, {1}, opt).p[0], 0.4, 1e-9);
  opt.round_decimals = -1;
  EXPECT_NEAR(RunPrs({0.3449}, {1}, opt).p[0], 0.449, 1e-9);
  EXPECT_DOUBLE_EQ(RoundDecimals(0.125, 2), 0.12);  // half to even on the exact binary value, like Python
  EXPECT_DOUBLE_EQ(RoundDecimals(0.375, 2), 0.38);
  EXPECT_DOUBLE_EQ(RoundDecimals(0.285, 2), 0.28);  // 0.285 is 0.28499999... in binary
  EXPECT_DOUBLE_EQ(RoundDecimals(0.8615, 2), 0.86);
}

TEST(Prs, HardThresholdAndSpeedupOr) {
  PrsOptions opt;
  opt.factor = 0;
  Prs r = RunPrs({0.29, 0.3, 0.31}, {1, 1, 1}, opt);
  EXPECT_EQ(r.p, (std::vector<double>{0.0, 1.0, 1.0}));
  opt.factor = 0.1;
  opt.speedup_threshold = 1.5;
  std::vector<double> s = {2.0, 1.0, 1.0};
  r = RunPrs({0.0, 0.0, 0.35}, {1, 1, 1}, opt, &s);
  EXPECT_DOUBLE_EQ(r.p[0], 1.0);
  EXPECT_DOUBLE_EQ(r.p[1], 0.0);
  EXPECT_NEAR(r.p[2], 0.5, 1e-12);
}

TEST(Prs, SeededBernoulliMatchesItsProbability) {
  PrsOptions opt;
  opt.seed = 42;
  std::vector<double> cov(20000, 0.33);  // p = 0.3
  std::vector<uint8_t> correct(cov.size(), 1);
  Prs a = RunPrs(cov, correct, opt), b = RunPrs(cov, correct, opt);
  EXPECT_EQ(a.keep, b.keep);  // same seed, same draws
  double kept = 0;
  for (size_t i = 0; i < cov.size(); ++i) {
    kept += a.keep[i];
    EXPECT_EQ(a.keep[i], PrsUniform(42, i) < a.p[i] ? 1 : 0);
  }
  EXPECT_NEAR(kept / static_cast<double>(cov.size()), 0.3, 0.02);
  opt.seed = 43;
  EXPECT_NE(RunPrs(cov, correct, opt).keep, a.keep);
}

TEST(Prs, GeometricLevelUsesTheTrajectoryMean) {
  std::vector<int64_t> traj = {0, 0, 1}, turn = {1, 2, 1};
  TurnRows rows{3, nullptr, traj.data(), turn.data()};
  std::vector<double> cov = {0.25, 1.0, 0.5};
  std::vector<uint8_t> correct = {1, 1, 1};
  PrsInput in;
  in.size = 3;
  in.coverage = cov.data();
  in.correct = correct.data();
  in.rows = &rows;
  PrsOptions opt;
  opt.level = PrsLevel::kGeometric;
  std::vector<double> p(3);
  std::vector<uint8_t> keep(3);
  ASSERT_TRUE(ProfilingRejection(in, opt, p.data(), keep.data()).ok());
  EXPECT_NEAR(p[0], 1.0, 1e-12);  // sqrt(0.25 * 1) = 0.5 -> p = 1
  EXPECT_NEAR(p[1], 1.0, 1e-12);
  in.rows = nullptr;
  EXPECT_FALSE(ProfilingRejection(in, opt, p.data(), keep.data()).ok());
}

// Large batches run on threads: every row still gets the draw of its own index and its own probability.
TEST(Prs, LargeBatchRowsAreIndependentOfTheThreadSplit) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(0, 1);
  const size_t n = 300001;
  std::vector<double> cov(n), speed(n);
  std::vector<uint8_t> correct(n), valid(n);
  for (size_t i = 0; i < n; ++i) {
    cov[i] = u(rng) * 0.6;
    speed[i] = u(rng) * 3;
    correct[i] = u(rng) < 0.6;
    valid[i] = u(rng) < 0.9;
  }
  PrsOptions opt;
  opt.seed = 77;
  opt.speedup_threshold = 2.5;
  PrsInput in;
  in.size = n;
  in.coverage = cov.data();
  in.correct = correct.data();
  in.speedup = speed.data();
  in.valid = valid.data();
  std::vector<double> p(n);
  std::vector<uint8_t> keep(n);
  ASSERT_TRUE(ProfilingRejection(in, opt, p.data(), keep.data()).ok());
  for (size_t i = 0; i < n; ++i) {
    double want = 1.0;
    if (correct[i]) want = speed[i] >= 2.5 ? 1.0 : std::clamp((RoundDecimals(cov[i], 2) - 0.3) / 0.1, 0.0, 1.0);
    if (!valid[i]) want = 0.0;
    ASSERT_EQ(p[i], want) << "row " << i;
    ASSERT_EQ(keep[i], PrsUniform(77, i) < want ? 1 : 0) << "row " << i;
  }
}

}  // namespace
}  // namespace kgym::rl
