#include "rl/mismatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kgym::rl {
namespace {

// Rows with tokens: each row given as its list of log-ratios (logp_rollout = 0, logp_train = ratio).
struct TokenBatch {
  std::vector<int64_t> traj, turn, offsets{0};
  std::vector<double> train, rollout;
  std::vector<uint8_t> mask;
  TokenBatch& Add(int64_t t, int64_t k, std::vector<double> lr, std::vector<uint8_t> m = {}) {
    traj.push_back(t);
    turn.push_back(k);
    for (size_t j = 0; j < lr.size(); ++j) {
      train.push_back(-1.0 + lr[j]);
      rollout.push_back(-1.0);
      mask.push_back(m.empty() ? 1 : m[j]);
    }
    offsets.push_back(static_cast<int64_t>(train.size()));
    return *this;
  }
  TurnRows Rows() const { return {traj.size(), nullptr, traj.data(), turn.data()}; }
  TokenLogProbs<double> Tokens() const { return {traj.size(), offsets.data(), train.data(), rollout.data(), mask.data()}; }
};

struct Result {
  std::vector<double> ratio;
  std::vector<uint8_t> keep;
};

Result RunRows(const TokenBatch& b, const MrsOptions& opt) {
  std::vector<RowLogRatio> st(b.traj.size());
  EXPECT_TRUE(SummarizeLogRatios(b.Tokens(), st.data()).ok());
  Result r{std::vector<double>(b.traj.size()), std::vector<uint8_t>(b.traj.size())};
  Status s = MismatchRejection(b.Rows(), st.data(), opt, r.ratio.data(), r.keep.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

// Large batches are split over threads at trajectory boundaries: the result equals the one-pass row path.
TEST(Mrs, LargeBatchSplitOverThreadsMatchesRowPath) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.0015);
  std::uniform_int_distribution<int> len(0, 5), turns(1, 4);
  TokenBatch b;
  for (int t = 0; b.traj.size() < 300000; ++t) {
    const int nt = turns(rng);
    for (int k = 1; k <= nt; ++k) {
      std::vector<double> lr(len(rng));
      for (double& x : lr) x = noise(rng);
      b.Add(t, k, lr);
    }
  }
  for (auto level : {MrsLevel::kGeometric, MrsLevel::kTurn, MrsLevel::kSequence}) {
    MrsOptions opt;
    opt.level = level;
    opt.veto = 0.995;
    Result r = RunRows(b, opt);
    Result fused{std::vector<double>(b.traj.size()), std::vector<uint8_t>(b.traj.size())};
    ASSERT_TRUE(MismatchRejectionFromTokens(b.Rows(), b.Tokens(), opt, fused.ratio.data(), fused.keep.data()).ok());
    EXPECT_EQ(fused.keep, r.keep);
    EXPECT_EQ(fused.ratio, r.ratio);
  }
}

TEST(Mrs, GeometricJudgesTheWholeTrajectory) {
  TokenBatch b;
  // traj 0: mean log-ratio over all 4 valid tokens = (0.002 - 0.002 + 0.0004 + 0) / 4 = 1e-4 -> kept.
  b.Add(0, -1, {}).Add(0, 1, {0.002, -0.002}).Add(0, 2, {0.0004, 0.0});
  // traj 1: mean 0.002 -> w = 1.002 > 1.001, both turns rejected even though turn 1 alone is fine.
  b.Add(1, 1, {0.0, 0.0}).Add(1, 2, {0.006});
  MrsOptions opt;
  Result r = RunRows(b, opt);
  EXPECT_NEAR(r.ratio[1], std::exp(1e-4), 1e-12);
  EXPECT_EQ(r.ratio[1], r.ratio[2]);
  EXPECT_EQ(r.keep, (std::vector<uint8_t>{1, 1, 1, 0, 0}));
  EXPECT_NEAR(r.ratio[3], std::exp(0.002), 1e-12);
}

TEST(Mrs, MaskedTokensDoNotCount) {
  TokenBatch b;
  b.Add(0, 1, {0.0, 5.0}, {1, 0});
  Result r = RunRows(b, MrsOptions{});
  EXPECT_DOUBLE_EQ(r.ratio[0], 1.0);
  EXPECT_EQ(r.keep[0], 1);
}

TEST(Mrs, VetoIsPerTurnInTheCodeAndPerTrajectoryInThePaper) {
  TokenBatch b;
  // One catastrophic token (log ratio -10 < log 1e-4) in turn 2; the geometric mean is kept loose by bounds.
  b.Add(0, 1, {0.0, 0.0}).Add(0, 2, {-10.0, 10.0});
  MrsOptions opt;
  opt.lower = 0.5;
  opt.upper = 2.0;
  Result code = RunRows(b, opt);
  EXPECT_EQ(code.keep, (std::vector<uint8_t>{1, 0}));
  opt.veto_scope = VetoScope::kTrajectory;
  Result paper = RunRows(b, opt);
  EXPECT_EQ(paper.keep, (std::vector<uint8_t>{0, 0}));
  opt.veto = 0;  // off
  EXPECT_EQ(RunRows(b, opt).keep, (std::vector<uint8_t>{1, 1}));
}

TEST(Mrs, OtherLevels) {
  TokenBatch b;
  b.Add(0, 1, {0.25, 0.25}).Add(0, 2, {0.1});
  MrsOptions opt;
  opt.lower = 0.5;
  opt.upper = 2.0;
  opt.level = MrsLevel::kTurn;
  Result r = RunRows(b, opt);
  EXPECT_NEAR(r.ratio[0], std::exp(0.5), 1e-12);
  EXPECT_NEAR(r.ratio[1], std::exp(0.1), 1e-12);
  opt.level = MrsLevel::kTurnGeo;
  r = RunRows(b, opt);
  EXPECT_NEAR(r.ratio[0], std::exp(0.25), 1e-12);
  opt.level = MrsLevel::kSequence;
  r = RunRows(b, opt);
  EXPECT_NEAR(r.ratio[0], std::exp(0.6), 1e-12);
  EXPECT_EQ(r.keep, (std::vector<uint8_t>{1, 1}));
  opt.upper = 1.5;
  EXPECT_EQ(RunRows(b, opt).keep, (std::vector<uint8_t>{0, 0}));
  b.Add(1, 1, {100.0});  // clamp at +20
  EXPECT_NEAR(RunRows(b, opt).ratio[2], std::exp(20.0), 1e-3);
}

TEST(Mrs, TokenLevel) {
  TokenBatch b;
  b.Add(0, 1, {0.0, 0.5, -0.0005}).Add(0, 2, {0.9}).Add(1, -1, {0.0});
  MrsOptions opt;
  opt.level = MrsLevel::kToken;
  std::vector<uint8_t> tk(b.train.size()), rk(3);
  ASSERT_TRUE(TokenMismatchRejection(b.Rows(), b.Tokens(), opt, tk.data(), rk.data()).ok());
  EXPECT_EQ(tk, (std::vector<uint8_t>{1, 0, 1, 0, 0}));
  EXPECT_EQ(rk, (std::vector<uint8_t>{1, 0, 0}));
  std::vector<double> ratio(3);
  std::vector<uint8_t> keep(3);
  std::vector<RowLogRatio> st(3);
  EXPECT_FALSE(MismatchRejection(b.Rows(), st.data(), opt, ratio.data(), keep.data()).ok());
}

TEST(Mrs, FloatTokensAndBadOffsets) {
  std::vector<int64_t> off = {0, 2, 3};
  std::vector<float> a = {-1.0f, -2.0f, -3.0f}, b = {-1.0f, -2.5f, -3.0f};
  std::vector<RowLogRatio> st(2);
  ASSERT_TRUE(SummarizeLogRatios(TokenLogProbs<float>{2, off.data(), a.data(), b.data(), nullptr}, st.data()).ok());
  EXPECT_NEAR(st[0].sum, 0.5, 1e-6);
  EXPECT_EQ(st[0].count, 2);
  EXPECT_NEAR(st[0].min, 0.0, 1e-6);
  EXPECT_EQ(st[1].count, 1);
  off = {0, 3, 2};
  EXPECT_FALSE(SummarizeLogRatios(TokenLogProbs<float>{2, off.data(), a.data(), b.data(), nullptr}, st.data()).ok());
}

TEST(Property, MrsKeepsATrajectoryIffItsGeometricRatioIsWithinBounds) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.0015);
  std::uniform_int_distribution<int> len(0, 6), turns(1, 3);
  for (int trial = 0; trial < 40; ++trial) {
    TokenBatch b;
    for (int t = 0; t < 30; ++t) {
      const int nt = turns(rng);
      for (int k = 1; k <= nt; ++k) {
        std::vector<double> lr(len(rng));
        for (double& x : lr) x = noise(rng);
        b.Add(t, k, lr);
      }
    }
    MrsOptions opt;
    opt.veto = 0;
    Result r = RunRows(b, opt);
    Result fused{std::vector<double>(b.traj.size()), std::vector<uint8_t>(b.traj.size())};
    ASSERT_TRUE(MismatchRejectionFromTokens(b.Rows(), b.Tokens(), opt, fused.ratio.data(), fused.keep.data()).ok());
    EXPECT_EQ(fused.keep, r.keep);
    EXPECT_EQ(fused.ratio, r.ratio);
    for (size_t i = 0; i < b.traj.size();) {
      size_t end = i;
      double sum = 0;
      int64_t n = 0;
      while (end < b.traj.size() && b.traj[end] == b.traj[i]) {
        for (int64_t j = b.offsets[end]; j < b.offsets[end + 1]; ++j, ++n) sum += b.train[j] - b.rollout[j];
        ++end;
      }
      const double w = std::exp(n ? sum / static_cast<double>(n) : 0.0);
      const bool inside = w >= 0.999 && w <= 1.001;
      for (size_t k = i; k < end; ++k) {
        EXPECT_NEAR(r.ratio[k], w, 1e-12);
        EXPECT_EQ(r.keep[k], inside ? 1 : 0) << "trial " << trial << " row " << k << " w " << w;
      }
      i = end;
    }
  }
}

}  // namespace
}  // namespace kgym::rl
