#include "rl/profiling_rejection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <vector>

#include "core/parallel_for.h"

namespace kgym::rl {
namespace {

inline uint64_t SplitMix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Coverage and correctness are noise to a branch predictor, so the per-row work is branch-free: the ramp
// clamps with minsd/maxsd and the results are chosen by bit masks.
inline double Clamp01(double v) {
#if defined(__SSE2__)
  return _mm_cvtsd_f64(_mm_min_sd(_mm_max_sd(_mm_set_sd(v), _mm_setzero_pd()), _mm_set_sd(1.0)));
#else
  return std::min(std::max(v, 0.0), 1.0);
#endif
}

inline double Select(bool take_a, double a, double b) {
  uint64_t ua, ub;
  std::memcpy(&ua, &a, sizeof ua);
  std::memcpy(&ub, &b, sizeof ub);
  const uint64_t m = 0 - static_cast<uint64_t>(take_a);
  const uint64_t r = (ua & m) | (ub & ~m);
  double out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}

inline double Uniform(uint64_t seed, uint64_t index) {
  return static_cast<double>(SplitMix64(seed ^ SplitMix64(index)) >> 11) * 0x1.0p-53;
}

inline double KeepProbability(double c, const PrsOptions& opt) {
  if (opt.factor > 0) return Clamp01((c - opt.threshold) / opt.factor);
  return Select(c >= opt.threshold, 1.0, 0.0);
}

}  // namespace

Status ParsePrsLevel(const std::string& name, PrsLevel* out) {
  if (name == "turn")
    *out = PrsLevel::kTurn;
  else if (name == "geometric")
    *out = PrsLevel::kGeometric;
  else
    return Status::InvalidArgument("unknown PRS level '" + name + "': use turn | geometric");
  return Status::Ok();
}

double PrsUniform(uint64_t seed, uint64_t index) { return Uniform(seed, index); }

double RoundDecimals(double x, int decimals) {
  if (decimals < 0 || !std::isfinite(x)) return x;
  if (decimals <= 6) {
    static const double kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    const double scale = kPow10[decimals];
    const double y = x * scale;
    if (std::fabs(y) < 0x1.0p51) {
      // Round half to even without a libm call: adding and removing 1.5·2^52 leaves the nearest integer.
      const double r = (y + 0x1.8p52) - 0x1.8p52;
      // Away from a tie the scaled product rounds like the exact value; near one, ask printf (exact, half-even).
      if (std::fabs(std::fabs(y - r) - 0.5) > 1e-6) return r / scale;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return std::strtod(buf, nullptr);
}

Status ProfilingRejection(const PrsInput& in, const PrsOptions& opt, double* keep_prob, uint8_t* keep) {
  if (in.size > 0 && (in.coverage == nullptr || in.correct == nullptr)) {
    return Status::InvalidArgument("prs: coverage and correct are required");
  }
  if (opt.speedup_threshold >= 0 && in.size > 0 && in.speedup == nullptr) {
    return Status::InvalidArgument("prs: speedup_threshold needs the speedup of every row");
  }
  std::vector<double> geo;  // per row, the trajectory's geometric coverage
  if (opt.level == PrsLevel::kGeometric) {
    if (in.rows == nullptr || in.rows->size != in.size) {
      return Status::InvalidArgument("prs: the geometric level needs the turn rows (traj, turn) of every row");
    }
    const TurnRows& rows = *in.rows;
    if (Status s = ValidateTurnRows(rows, 0, nullptr); !s.ok()) return s;
    geo.assign(in.size, 0.0);
    for (size_t i = 0; i < rows.size;) {
      size_t end = i + 1;
      while (end < rows.size && rows.traj[end] == rows.traj[i]) ++end;
      double sum_log = 0.0;
      int64_t n = 0;
      for (size_t k = i; k < end; ++k) {
        if (rows.turn[k] <= 0 || (in.valid != nullptr && !in.valid[k])) continue;
        sum_log += std::log(std::max(RoundDecimals(in.coverage[k], opt.round_decimals), 1e-8));
        ++n;
      }
      const double g = n > 0 ? std::exp(sum_log / static_cast<double>(n)) : 0.0;
      for (size_t k = i; k < end; ++k) geo[k] = g;
      i = end;
    }
  }
  const bool speed_or = opt.speedup_threshold >= 0;
  const uint64_t seed = opt.seed;
  // Rows are independent (the draw of row i depends on (seed, i) only): large batches run on a few threads.
  ParallelForRanges(EvenCuts(in.size, size_t{1} << 17), [&](size_t, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      // Computed for every row and selected afterwards: `correct` is as unpredictable as a coin.
      const double c = opt.level == PrsLevel::kGeometric ? geo[i] : RoundDecimals(in.coverage[i], opt.round_decimals);
      double ramp = KeepProbability(c, opt);
      if (speed_or) ramp = Select(in.speedup[i] >= opt.speedup_threshold, 1.0, ramp);
      double p = Select(in.correct[i] != 0, ramp, 1.0);
      if (in.valid != nullptr) p = Select(in.valid[i] != 0, p, 0.0);
      keep_prob[i] = p;
      keep[i] = static_cast<uint8_t>(Uniform(seed, i) < p);
    }
  });
  return Status::Ok();
}

}  // namespace kgym::rl
