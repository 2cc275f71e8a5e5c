#include "rl/mismatch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/parallel_for.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KGYM_RL_AVX2 1
#endif

namespace kgym::rl {
namespace {

constexpr double kLogClamp = 20.0;

inline double ClampedExp(double log_w) { return std::exp(std::clamp(log_w, -kLogClamp, kLogClamp)); }

template <typename T>
Status CheckTokens(const TokenLogProbs<T>& tokens) {
  if (tokens.rows == 0) return Status::Ok();
  if (tokens.logp_train == nullptr || tokens.logp_rollout == nullptr) {
    return Status::InvalidArgument("mrs: logp_train and logp_rollout are required");
  }
  if (tokens.offsets == nullptr) {
    if (tokens.row_length <= 0) {
      return Status::InvalidArgument("mrs: give offsets (CSR rows) or row_length > 0 (padded rows)");
    }
    return Status::Ok();
  }
  if (tokens.offsets[0] != 0) return Status::InvalidArgument("mrs: offsets[0] must be 0");
  bool decreasing = false;
  for (size_t i = 0; i < tokens.rows; ++i) decreasing |= tokens.offsets[i + 1] < tokens.offsets[i];
  if (decreasing) {
    for (size_t i = 0; i < tokens.rows; ++i) {
      if (tokens.offsets[i + 1] < tokens.offsets[i]) {
        return Status::InvalidArgument("mrs: offsets decrease at row " + std::to_string(i));
      }
    }
  }
  return Status::Ok();
}

// Row i's tokens are [RowBegin(i), RowBegin(i + 1)).
template <typename T>
inline int64_t RowBegin(const TokenLogProbs<T>& tokens, size_t i) {
  return tokens.offsets != nullptr ? tokens.offsets[i] : static_cast<int64_t>(i) * tokens.row_length;
}

inline bool Vetoed(const RowLogRatio& s, double log_veto) { return s.count > 0 && s.min < log_veto; }

}  // namespace

Status ParseMrsLevel(const std::string& name, MrsLevel* out) {
  if (name == "geometric")
    *out = MrsLevel::kGeometric;
  else if (name == "token")
    *out = MrsLevel::kToken;
  else if (name == "turn")
    *out = MrsLevel::kTurn;
  else if (name == "turn_geo")
    *out = MrsLevel::kTurnGeo;
  else if (name == "sequence")
    *out = MrsLevel::kSequence;
  else
    return Status::InvalidArgument("unknown MRS level '" + name +
                                   "': use geometric | token | turn | turn_geo | sequence");
  return Status::Ok();
}

namespace {

inline uint64_t BitsOf(double x) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline double DoubleOf(uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

template <typename T>
inline RowLogRatio SummarizeTokens(const T* a, const T* b, const uint8_t* m, int64_t begin, int64_t end,
                                   RowLogRatio acc = {0.0, 0, std::numeric_limits<double>::infinity()}) {
  // `acc` lets a caller that summed the first tokens of a row elsewhere continue with the rest, in order.
  double sum = acc.sum, mn = acc.min;
  int64_t n = acc.count;
  if (m == nullptr) {
    for (int64_t j = begin; j < end; ++j) {
      const double lr = static_cast<double>(a[j]) - static_cast<double>(b[j]);
      sum += lr;
      mn = lr < mn ? lr : mn;
    }
    n += end - begin;
  } else {
    // Branch-free: a mask is noise to the branch predictor (GCC turns `v ? lr : 0.0` into a branch). A masked
    // token adds +0.0 (all bits cleared, as `v ? lr : 0.0` would) and offers +inf to the minimum, which never
    // replaces it — the same results as skipping the token.
    const uint64_t inf = BitsOf(std::numeric_limits<double>::infinity());
    for (int64_t j = begin; j < end; ++j) {
      const double lr = static_cast<double>(a[j]) - static_cast<double>(b[j]);
      const uint64_t v = m[j] != 0;
      const uint64_t keep = 0 - v;
      const uint64_t bits = BitsOf(lr) & keep;
      sum += DoubleOf(bits);
      const double candidate = DoubleOf(bits | (inf & ~keep));
      mn = candidate < mn ? candidate : mn;
      n += static_cast<int64_t>(v);
    }
  }
  return {sum, n, mn};
}

template <typename T>
inline RowLogRatio SummarizeRow(const TokenLogProbs<T>& tokens, size_t i) {
  return SummarizeTokens(tokens.logp_train, tokens.logp_rollout, tokens.token_mask, RowBegin(tokens, i),
                         RowBegin(tokens, i + 1));
}

#if KGYM_RL_AVX2
// Four rows of L float tokens each, the first at token `base`, the others following at a stride of L, in the
// four lanes of AVX2 registers: 4×4 blocks of tokens are transposed so that each lane adds its own row's tokens in
// token order, with the same IEEE operations as SummarizeTokens (float→double, subtract, add; vminpd keeps its
// second operand unless the first is smaller, exactly `c < mn ? c : mn`). So every row's summary is the scalar
// one bit for bit; only the instruction count drops (a masked token costs no branch and ~1/4 of the work).
__attribute__((target("avx2"))) void SummarizeFourRowsAvx2(const float* a, const float* b, const uint8_t* m,
                                                           int64_t base, int64_t L, RowLogRatio* out) {
  const __m256d inf = _mm256_set1_pd(std::numeric_limits<double>::infinity());
  const __m128i token_major = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m256d sum = _mm256_setzero_pd(), mn = inf;
  __m256i cnt = _mm256_setzero_si256();
  const int64_t r0 = base, r1 = base + L, r2 = base + 2 * L, r3 = base + 3 * L;
  int64_t j = 0;
  for (; j + 4 <= L; j += 4) {
    __m128 a0 = _mm_loadu_ps(a + r0 + j), a1 = _mm_loadu_ps(a + r1 + j), a2 = _mm_loadu_ps(a + r2 + j),
           a3 = _mm_loadu_ps(a + r3 + j);
    __m128 b0 = _mm_loadu_ps(b + r0 + j), b1 = _mm_loadu_ps(b + r1 + j), b2 = _mm_loadu_ps(b + r2 + j),
           b3 = _mm_loadu_ps(b + r3 + j);
    _MM_TRANSPOSE4_PS(a0, a1, a2, a3);  // a_q = token j+q of the four rows
    _MM_TRANSPOSE4_PS(b0, b1, b2, b3);
    __m128i mb = _mm_set1_epi8(1);
    if (m != nullptr) {
      uint32_t w[4];
      std::memcpy(&w[0], m + r0 + j, 4);
      std::memcpy(&w[1], m + r1 + j, 4);
      std::memcpy(&w[2], m + r2 + j, 4);
      std::memcpy(&w[3], m + r3 + j, 4);
      mb = _mm_shuffle_epi8(_mm_setr_epi32(static_cast<int>(w[0]), static_cast<int>(w[1]), static_cast<int>(w[2]),
                                           static_cast<int>(w[3])),
                            token_major);  // byte 4q + k = mask of token j+q of row k
    }
    const __m128 as[4] = {a0, a1, a2, a3}, bs[4] = {b0, b1, b2, b3};
    for (int q = 0; q < 4; ++q) {
      __m128i bytes;
      switch (q) {  // _mm_srli_si128 needs a constant
        case 0:
          bytes = mb;
          break;
        case 1:
          bytes = _mm_srli_si128(mb, 4);
          break;
        case 2:
          bytes = _mm_srli_si128(mb, 8);
          break;
        default:
          bytes = _mm_srli_si128(mb, 12);
          break;
      }
      const __m256i valid = _mm256_cmpgt_epi64(_mm256_cvtepu8_epi64(bytes), _mm256_setzero_si256());
      const __m256d vmask = _mm256_castsi256_pd(valid);
      const __m256d lr = _mm256_sub_pd(_mm256_cvtps_pd(as[q]), _mm256_cvtps_pd(bs[q]));
      sum = _mm256_add_pd(sum, _mm256_and_pd(lr, vmask));
      mn = _mm256_min_pd(_mm256_blendv_pd(inf, lr, vmask), mn);
      cnt = _mm256_sub_epi64(cnt, valid);
    }
  }
  alignas(32) double sums[4], mins[4];
  alignas(32) int64_t counts[4];
  _mm256_store_pd(sums, sum);
  _mm256_store_pd(mins, mn);
  _mm256_store_si256(reinterpret_cast<__m256i*>(counts), cnt);
  for (int k = 0; k < 4; ++k) {  // the last L % 4 tokens of each row, continuing its accumulators in order
    const int64_t begin = base + k * L;
    RowLogRatio tail = {sums[k], counts[k], mins[k]};
    if (j < L) tail = SummarizeTokens(a, b, m, begin + j, begin + L, tail);
    out[k] = tail;
  }
}
#endif

// Summaries of rows [from, to) into out[0, to - from). Float rows go four at a time through AVX2 where the CPU has
// it (chosen at run time: the default build targets plain x86-64) and four consecutive rows have one length.
template <typename T>
void SummarizeRows(const TokenLogProbs<T>& tokens, size_t from, size_t to, RowLogRatio* out) {
  size_t i = from;
#if KGYM_RL_AVX2
  if constexpr (std::is_same_v<T, float>) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) {
      for (; i + 4 <= to; i += 4) {
        const int64_t base = RowBegin(tokens, i), len = RowBegin(tokens, i + 1) - base;
        if (len >= 4 && RowBegin(tokens, i + 2) - base == 2 * len && RowBegin(tokens, i + 3) - base == 3 * len &&
            RowBegin(tokens, i + 4) - base == 4 * len) {
          SummarizeFourRowsAvx2(tokens.logp_train, tokens.logp_rollout, tokens.token_mask, base, len, out + (i - from));
        } else {
          for (size_t k = i; k < i + 4; ++k) out[k - from] = SummarizeRow(tokens, k);
        }
      }
    }
  }
#endif
  for (; i < to; ++i) out[i - from] = SummarizeRow(tokens, i);
}

inline double Select(bool take_a, double a, double b) {
  const uint64_t m = 0 - static_cast<uint64_t>(take_a);
  return DoubleOf((BitsOf(a) & m) | (BitsOf(b) & ~m));
}

// Ratio and keep for the rows [begin, end) of one trajectory; stats[k - begin] summarises row k. Padding rows
// sit at random places in a batch, so they are handled by selects rather than branches; their summaries (which
// may hold anything) never reach a real row's result.
void DecideTrajectory(const TurnRows& rows, size_t begin, size_t end, const RowLogRatio* stats, const MrsOptions& opt,
                      double log_veto, double* ratio, uint8_t* keep) {
  double traj_sum = 0.0;  // starts at +0.0 and so never becomes -0.0: adding +0.0 for a padding row is exact
  int64_t traj_count = 0;
  bool traj_vetoed = false;
  for (size_t k = begin; k < end; ++k) {
    const bool real = rows.turn[k] > 0;
    const RowLogRatio& s = stats[k - begin];
    traj_sum += Select(real, s.sum, 0.0);
    traj_count += real ? s.count : 0;
    traj_vetoed |= real & Vetoed(s, log_veto);
  }
  const bool per_row = opt.level == MrsLevel::kTurn || opt.level == MrsLevel::kTurnGeo;
  double traj_w = 1.0;  // geometric and sequence judge the whole trajectory by one ratio: one exp per trajectory
  if (opt.level == MrsLevel::kGeometric) {
    traj_w = ClampedExp(traj_count > 0 ? traj_sum / static_cast<double>(traj_count) : 0.0);
  } else if (opt.level == MrsLevel::kSequence) {
    traj_w = ClampedExp(traj_sum);
  }
  const bool traj_scope = opt.veto_scope == VetoScope::kTrajectory;
  for (size_t k = begin; k < end; ++k) {
    const bool real = rows.turn[k] > 0;
    const RowLogRatio& s = stats[k - begin];
    double w = traj_w;
    if (per_row) {
      const double log_w = opt.level == MrsLevel::kTurn ? s.sum
                           : s.count > 0                ? s.sum / static_cast<double>(s.count)
                                                        : 0.0;
      w = ClampedExp(log_w);
    }
    const bool vetoed = traj_scope ? traj_vetoed : Vetoed(s, log_veto);
    ratio[k] = Select(real, w, 1.0);
    const bool inside = (w >= opt.lower) & (w <= opt.upper) & !vetoed;
    keep[k] = static_cast<uint8_t>(real ? inside : true);
  }
}

inline double LogVeto(const MrsOptions& opt) {
  return opt.veto > 0 ? std::log(opt.veto) : -std::numeric_limits<double>::infinity();
}

}  // namespace

template <typename T>
Status SummarizeLogRatios(const TokenLogProbs<T>& tokens, RowLogRatio* out) {
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  SummarizeRows(tokens, 0, tokens.rows, out);
  return Status::Ok();
}

namespace {

// Row-level MRS over all rows, the summaries of rows [c0, c1) coming from fill(c0, c1, buf) (a pointer to c1 - c0
// of them, in buf or elsewhere). Trajectories are independent: large batches are split at trajectory boundaries
// over a few threads (every row is computed exactly as in one thread, so the result does not depend on the split).
// Rows are taken a few thousand at a time (whole trajectories) and judged while still in cache; the turn order is
// checked on the way, and a violation is explained by ValidateTurnRows afterwards.
template <typename Fill>
Status DecideRows(const TurnRows& rows, const MrsOptions& opt, Fill fill, double* ratio, uint8_t* keep) {
  if (opt.level == MrsLevel::kToken) {
    return Status::InvalidArgument("mrs: the token level needs the tokens (TokenMismatchRejection)");
  }
  if (rows.size > 0 && (rows.traj == nullptr || rows.turn == nullptr)) {
    return Status::InvalidArgument("turn rows: traj and turn arrays are required");
  }
  const double log_veto = LogVeto(opt);
  auto run = [&](size_t from, size_t to, uint8_t* bad) {
    constexpr size_t kChunkRows = 2048;
    std::vector<RowLogRatio> buf;
    bool violated = false;
    for (size_t c0 = from; c0 < to;) {
      size_t c1 = std::min(to, c0 + kChunkRows);
      while (c1 < to && rows.traj[c1] == rows.traj[c1 - 1]) ++c1;  // end the chunk with a trajectory
      const RowLogRatio* stats = fill(c0, c1, buf);
      for (size_t i = c0; i < c1;) {
        size_t end = i + 1;
        while (end < c1 && rows.traj[end] == rows.traj[i]) ++end;
        int64_t last_turn = 0;
        for (size_t k = i; k < end; ++k) {
          const int64_t t = rows.turn[k];
          violated |= (t > 0) & (t <= last_turn);
          last_turn = t > 0 ? t : last_turn;
        }
        DecideTrajectory(rows, i, end, stats + (i - c0), opt, log_veto, ratio, keep);
        i = end;
      }
      c0 = c1;
    }
    *bad = violated;
  };
  std::vector<size_t> cut = EvenCuts(rows.size, size_t{1} << 16);
  for (size_t p = 1; p + 1 < cut.size(); ++p) {
    size_t c = std::max(cut[p - 1], cut[p]);
    while (c > 0 && c < rows.size && rows.traj[c] == rows.traj[c - 1]) ++c;  // never split a trajectory
    cut[p] = c;
  }
  std::vector<uint8_t> bad(cut.size(), 0);
  ParallelForRanges(cut, [&](size_t p, size_t from, size_t to) { run(from, to, &bad[p]); });
  for (uint8_t b : bad) {
    if (b) {
      if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

}  // namespace

template <typename T>
Status MismatchRejectionFromTokens(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                                   double* ratio, uint8_t* keep) {
  if (opt.level == MrsLevel::kToken) {
    return Status::InvalidArgument("mrs: the token level is TokenMismatchRejection");
  }
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  if (rows.size != tokens.rows) return Status::InvalidArgument("mrs: rows and token rows differ in number");
  auto fill = [&](size_t c0, size_t c1, std::vector<RowLogRatio>& buf) {
    buf.resize(c1 - c0);
    SummarizeRows(tokens, c0, c1, buf.data());
    return static_cast<const RowLogRatio*>(buf.data());
  };
  return DecideRows(rows, opt, fill, ratio, keep);
}

Status MismatchRejection(const TurnRows& rows, const RowLogRatio* stats, const MrsOptions& opt, double* ratio,
                         uint8_t* keep) {
  auto fill = [&](size_t c0, size_t, std::vector<RowLogRatio>&) { return stats + c0; };
  return DecideRows(rows, opt, fill, ratio, keep);
}

Status MismatchRejection(const TurnRows& rows, const RowLogRatioArrays& stats, const MrsOptions& opt, double* ratio,
                         uint8_t* keep) {
  if (rows.size > 0 && (stats.sum == nullptr || stats.count == nullptr || stats.min == nullptr)) {
    return Status::InvalidArgument("mrs: the sum, count and min arrays are required");
  }
  auto fill = [&](size_t c0, size_t c1, std::vector<RowLogRatio>& buf) {
    buf.resize(c1 - c0);
    for (size_t k = c0; k < c1; ++k) buf[k - c0] = {stats.sum[k], stats.count[k], stats.min[k]};
    return static_cast<const RowLogRatio*>(buf.data());
  };
  return DecideRows(rows, opt, fill, ratio, keep);
}

template <typename T>
Status TokenMismatchRejection(const TurnRows& rows, const TokenLogProbs<T>& tokens, const MrsOptions& opt,
                              uint8_t* token_keep, uint8_t* row_keep) {
  if (Status s = CheckTokens(tokens); !s.ok()) return s;
  if (rows.size != tokens.rows) return Status::InvalidArgument("mrs: rows and token rows differ in number");
  if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
  const double log_veto = opt.veto > 0 ? std::log(opt.veto) : -std::numeric_limits<double>::infinity();
  const uint8_t* m = tokens.token_mask;
  std::vector<uint8_t> vetoed(tokens.rows, 0);
  for (size_t i = 0; i < tokens.rows; ++i) {
    for (int64_t j = RowBegin(tokens, i), e = RowBegin(tokens, i + 1); j < e; ++j) {
      if (m != nullptr && !m[j]) continue;
      if (static_cast<double>(tokens.logp_train[j]) - static_cast<double>(tokens.logp_rollout[j]) < log_veto) {
        vetoed[i] = 1;
        break;
      }
    }
  }
  if (opt.veto_scope == VetoScope::kTrajectory) {
    for (size_t i = 0; i < rows.size;) {
      size_t end = i + 1;
      while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
      uint8_t any = 0;
      for (size_t k = i; k < end; ++k) any |= vetoed[k];
      for (size_t k = i; k < end; ++k) vetoed[k] = any;
      i = end;
    }
  }
  for (size_t i = 0; i < tokens.rows; ++i) {
    uint8_t any = 0;
    for (int64_t j = RowBegin(tokens, i), e = RowBegin(tokens, i + 1); j < e; ++j) {
      const bool valid = (m == nullptr || m[j]) && rows.turn[i] > 0;
      const double w =
          ClampedExp(static_cast<double>(tokens.logp_train[j]) - static_cast<double>(tokens.logp_rollout[j]));
      const uint8_t k = (valid && !vetoed[i] && w >= opt.lower && w <= opt.upper) ? 1 : 0;
      token_keep[j] = k;
      any |= k;
    }
    row_keep[i] = any;
  }
  return Status::Ok();
}

template Status SummarizeLogRatios<float>(const TokenLogProbs<float>&, RowLogRatio*);
template Status SummarizeLogRatios<double>(const TokenLogProbs<double>&, RowLogRatio*);
template Status MismatchRejectionFromTokens<float>(const TurnRows&, const TokenLogProbs<float>&, const MrsOptions&,
                                                   double*, uint8_t*);
template Status MismatchRejectionFromTokens<double>(const TurnRows&, const TokenLogProbs<double>&, const MrsOptions&,
                                                    double*, uint8_t*);
template Status TokenMismatchRejection<float>(const TurnRows&, const TokenLogProbs<float>&, const MrsOptions&, uint8_t*,
                                              uint8_t*);
template Status TokenMismatchRejection<double>(const TurnRows&, const TokenLogProbs<double>&, const MrsOptions&,
                                               uint8_t*, uint8_t*);

}  // namespace kgym::rl
