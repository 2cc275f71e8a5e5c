#include "rl/mismatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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
  TokenLogProbs<double> Tokens() const {
    return {traj.size(), offsets.data(), train.data(), rollout.data(), mask.data()};
  }
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

// The row summaries as the original one-accumulator loop computes them; every fast path must match it bit for bit.
template <typename T>
RowLogRatio PlainSummary(const T* a, const T* b, const uint8_t* m, int64_t begin, int64_t end) {
  RowLogRatio r{0.0, 0, std::numeric_limits<double>::infinity()};
  for (int64_t j = begin; j < end; ++j) {
    if (m != nullptr && !m[j]) continue;
    const double lr = static_cast<double>(a[j]) - static_cast<double>(b[j]);
    r.sum += lr;
    r.min = lr < r.min ? lr : r.min;
    ++r.count;
  }
  return r;
}

bool SameBits(const RowLogRatio& x, const RowLogRatio& y) {
  return std::memcmp(&x.sum, &y.sum, sizeof(double)) == 0 && x.count == y.count &&
         std::memcmp(&x.min, &y.min, sizeof(double)) == 0;
}

// Random float tokens with masks of any byte value, NaN / inf / huge tokens now and then.
struct RandomTokens {
  std::vector<int64_t> offsets{0};
  std::vector<float> a, b;
  std::vector<uint8_t> m;
  RandomTokens(std::mt19937_64& rng, const std::vector<int64_t>& lengths) {
    std::normal_distribution<float> lp(-1.0f, 0.7f), noise(0.0f, 0.01f);
    std::uniform_int_distribution<int> byte(0, 255), rare(0, 199);
    for (int64_t len : lengths) {
      for (int64_t j = 0; j < len; ++j) {
        float x = lp(rng), y = x + noise(rng);
        const int r = rare(rng);
        if (r == 0) y = std::numeric_limits<float>::quiet_NaN();
        if (r == 1) x = -std::numeric_limits<float>::infinity();
        if (r == 2) x = -1e30f;
        if (r == 3) x = y = -0.0f;
        a.push_back(x);
        b.push_back(y);
        const int k = byte(rng);
        m.push_back(k < 40 ? 0 : static_cast<uint8_t>(k));  // ~15% masked, valid tokens not only 1
      }
      offsets.push_back(static_cast<int64_t>(a.size()));
    }
  }
  size_t rows() const { return offsets.size() - 1; }
};

TEST(Mrs, SummariesMatchThePlainLoopBitForBitCsr) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> len(0, 13);
  std::vector<int64_t> lengths(4001);
  for (auto& l : lengths) l = len(rng);
  // Runs of equal lengths too (the four-row blocks), including lengths below, at and above one block of 4.
  for (int64_t l : {1, 3, 4, 5, 7, 8, 12, 13})
    for (int k = 0; k < 101; ++k) lengths.push_back(l);
  RandomTokens t(rng, lengths);
  for (const uint8_t* mask : {static_cast<const uint8_t*>(t.m.data()), static_cast<const uint8_t*>(nullptr)}) {
    std::vector<RowLogRatio> st(t.rows());
    ASSERT_TRUE(
        SummarizeLogRatios(TokenLogProbs<float>{t.rows(), t.offsets.data(), t.a.data(), t.b.data(), mask}, st.data())
            .ok());
    for (size_t i = 0; i < t.rows(); ++i) {
      const RowLogRatio want = PlainSummary(t.a.data(), t.b.data(), mask, t.offsets[i], t.offsets[i + 1]);
      ASSERT_TRUE(SameBits(st[i], want)) << "row " << i << " length " << t.offsets[i + 1] - t.offsets[i] << ": sum "
                                         << st[i].sum << " vs " << want.sum << ", min " << st[i].min << " vs "
                                         << want.min << ", count " << st[i].count << " vs " << want.count;
    }
  }
}

TEST(Mrs, PaddedRowsNeedNoOffsetsAndMatchCsr) {
  std::mt19937_64 rng(4);
  for (int64_t L : {1, 2, 3, 4, 5, 8, 11, 16}) {
    for (size_t rows : {size_t{0}, size_t{1}, size_t{6}, size_t{7}, size_t{1001}}) {
      RandomTokens t(rng, std::vector<int64_t>(rows, L));
      std::vector<RowLogRatio> padded(rows), csr(rows);
      TokenLogProbs<float> p{rows, nullptr, t.a.data(), t.b.data(), t.m.data(), L};
      ASSERT_TRUE(SummarizeLogRatios(p, padded.data()).ok());
      ASSERT_TRUE(SummarizeLogRatios(TokenLogProbs<float>{rows, t.offsets.data(), t.a.data(), t.b.data(), t.m.data()},
                                     csr.data())
                      .ok());
      for (size_t i = 0; i < rows; ++i) {
        ASSERT_TRUE(SameBits(padded[i], csr[i])) << "L " << L << " row " << i;
        ASSERT_TRUE(
            SameBits(padded[i], PlainSummary(t.a.data(), t.b.data(), t.m.data(), t.offsets[i], t.offsets[i + 1])));
      }
    }
  }
  std::vector<RowLogRatio> st(1);
  float x = 0;
  EXPECT_FALSE(SummarizeLogRatios(TokenLogProbs<float>{1, nullptr, &x, &x, nullptr, 0}, st.data()).ok());
}

// The fused token pass (blocks of rows, threads, the turn order checked on the way) equals the row path (itself
// threaded; summaries as structs or as three arrays), padded or CSR, float or double, on a batch large enough to
// be split over threads, with padding rows at random places.
TEST(Mrs, FusedPaddedTokensMatchTheRowPathOnALargeBatch) {
  std::mt19937_64 rng(5);
  const int64_t L = 6;
  std::vector<int64_t> traj, turn;
  std::uniform_int_distribution<int> real_turns(1, 3);
  for (int64_t t = 0; traj.size() < 200000; ++t) {
    const int k = real_turns(rng);
    for (int c = 0; c < 3; ++c) {  // three rows per trajectory, padding first
      traj.push_back(t);
      turn.push_back(c >= 3 - k ? c - (3 - k) + 1 : -1);
    }
  }
  const size_t n = traj.size();
  RandomTokens t(rng, std::vector<int64_t>(n, L));
  std::vector<double> ad(t.a.begin(), t.a.end()), bd(t.b.begin(), t.b.end());
  TurnRows rows{n, nullptr, traj.data(), turn.data()};
  for (auto level : {MrsLevel::kGeometric, MrsLevel::kTurn, MrsLevel::kTurnGeo, MrsLevel::kSequence}) {
    for (auto scope : {VetoScope::kTurn, VetoScope::kTrajectory}) {
      MrsOptions opt;
      opt.level = level;
      opt.veto_scope = scope;
      opt.lower = 0.97;
      opt.upper = 1.03;
      opt.veto = 0.9;
      std::vector<RowLogRatio> st(n);
      ASSERT_TRUE(
          SummarizeLogRatios(TokenLogProbs<float>{n, t.offsets.data(), t.a.data(), t.b.data(), t.m.data()}, st.data())
              .ok());
      std::vector<double> want_ratio(n), ratio(n), ratio_d(n);
      std::vector<uint8_t> want_keep(n), keep(n), keep_d(n);
      ASSERT_TRUE(MismatchRejection(rows, st.data(), opt, want_ratio.data(), want_keep.data()).ok());
      ASSERT_TRUE(MismatchRejectionFromTokens(rows,
                                              TokenLogProbs<float>{n, nullptr, t.a.data(), t.b.data(), t.m.data(), L},
                                              opt, ratio.data(), keep.data())
                      .ok());
      ASSERT_TRUE(MismatchRejectionFromTokens(rows,
                                              TokenLogProbs<double>{n, nullptr, ad.data(), bd.data(), t.m.data(), L},
                                              opt, ratio_d.data(), keep_d.data())
                      .ok());
      ASSERT_EQ(std::memcmp(ratio.data(), want_ratio.data(), n * sizeof(double)), 0);
      ASSERT_EQ(keep, want_keep);
      ASSERT_EQ(std::memcmp(ratio_d.data(), want_ratio.data(), n * sizeof(double)), 0);  // float→double is exact
      ASSERT_EQ(keep_d, want_keep);
      std::vector<double> sum(n), mn(n), ratio_soa(n);
      std::vector<int64_t> count(n);
      std::vector<uint8_t> keep_soa(n);
      for (size_t i = 0; i < n; ++i) sum[i] = st[i].sum, count[i] = st[i].count, mn[i] = st[i].min;
      ASSERT_TRUE(MismatchRejection(rows, RowLogRatioArrays{sum.data(), count.data(), mn.data()}, opt, ratio_soa.data(),
                                    keep_soa.data())
                      .ok());
      ASSERT_EQ(std::memcmp(ratio_soa.data(), want_ratio.data(), n * sizeof(double)), 0);
      ASSERT_EQ(keep_soa, want_keep);
      for (size_t i = 0; i < n; ++i) {
        if (turn[i] <= 0) {
          ASSERT_TRUE(ratio[i] == 1.0 && keep[i] == 1) << "padding row " << i;
        }
      }
    }
  }
}

// The fused pass checks the turn order itself; its error is ValidateTurnRows' (the first offending row).
TEST(Mrs, FusedPassReportsTheFirstTurnOrderViolation) {
  for (size_t n : {size_t{12}, size_t{300000}}) {
    std::vector<int64_t> traj(n), turn(n);
    for (size_t i = 0; i < n; ++i) {
      traj[i] = static_cast<int64_t>(i / 3);
      turn[i] = static_cast<int64_t>(i % 3) + 1;
    }
    std::swap(turn[n - 3], turn[n - 2]);  // two violations, in different thread parts when n is large
    std::swap(turn[n / 2 + 1 - (n / 2 + 1) % 3], turn[n / 2 + 2 - (n / 2 + 1) % 3]);
    std::vector<double> a(n, -1.0), ratio(n);
    std::vector<uint8_t> keep(n);
    TurnRows rows{n, nullptr, traj.data(), turn.data()};
    const Status want = ValidateTurnRows(rows, 0, nullptr);
    ASSERT_FALSE(want.ok());
    const Status got =
        MismatchRejectionFromTokens(rows, TokenLogProbs<double>{n, nullptr, a.data(), a.data(), nullptr, 1},
                                    MrsOptions{}, ratio.data(), keep.data());
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.message(), want.message());
  }
}

}  // namespace
}  // namespace kgym::rl
