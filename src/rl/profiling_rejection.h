// PRS: profiling-based rejection sampling (research/drkernel.md §3.2; the code's
// compute_coverage_rejection_mask with coverage_rs = "turn").
//
// For a correct turn (correctness && !decoy) with coverage c:
//   keep_prob = clip((c - threshold) / factor, 0, 1)      (factor <= 0: the hard rule c >= threshold)
// optionally OR-ed with speed: keep_prob = max(keep_prob, [speedup >= speedup_threshold]) when
// speedup_threshold >= 0. Incorrect turns always have keep_prob 1 (PRS only judges correct kernels).
// keep = Bernoulli(keep_prob) from a counter-based generator: u_i = U(splitmix64(seed ^ splitmix64(i))), keep
// iff u_i < keep_prob — so keep_prob 1 always keeps, 0 never, and the draw of row i depends on (seed, i) only.
// Code quirk kept by default: coverage is first rounded to 2 decimals (the reward manager logs
// float(f"{x:.2f}") and PRS reads that); round_decimals < 0 uses the raw value (the paper's PR).
// Level kGeometric (the code's "geometric"): c is replaced by exp(mean log(max(c, 1e-8))) over the valid
// rows of the trajectory (needs rows); kTurn (default) judges every row by its own coverage.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "rl/turn_rows.h"

namespace kgym::rl {

enum class PrsLevel { kTurn, kGeometric };

struct PrsOptions {
  double threshold = 0.3;
  double factor = 0.1;
  double speedup_threshold = -1.0;  // < 0: off (the recipe's SPEEDUP_THRESHOLD=null)
  int round_decimals = 2;           // < 0: no rounding
  uint64_t seed = 0;
  PrsLevel level = PrsLevel::kTurn;
};

Status ParsePrsLevel(const std::string& name, PrsLevel* out);  // turn | geometric

struct PrsInput {
  size_t size = 0;
  const double* coverage = nullptr;
  const uint8_t* correct = nullptr;  // correctness && !decoy_kernel
  const double* speedup = nullptr;   // needed only with speedup_threshold >= 0
  const uint8_t* valid = nullptr;    // rows still in the loss (after MRS); null = all. Invalid rows: p = 0
  const TurnRows* rows = nullptr;    // needed only for kGeometric
};

// keep_prob and keep have in.size entries.
Status ProfilingRejection(const PrsInput& in, const PrsOptions& opt, double* keep_prob, uint8_t* keep);

// The uniform draw in [0, 1) PRS uses for row `index` (exposed so other implementations can match it).
double PrsUniform(uint64_t seed, uint64_t index);

// Python's float(f"{x:.{decimals}f}") (round half to even on the exact binary value).
double RoundDecimals(double x, int decimals);

}  // namespace kgym::rl
