// Adaptive trial counts: a candidate's timed calls stop once the median they report is known well enough, instead of
// always running the configured count (a 47 ms kernel timed 100 times holds the device for 4.7 s; 25 calls tell its
// median within 0.5 %).
//
// The interval is distribution-free: the median's confidence interval from order statistics. For n samples sorted,
// [x(j), x(n+1-j)] (1-based) covers the true median with probability 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2),
// whatever the distribution of the samples (they need only be independent draws of one distribution: bimodal times,
// heavy tails and outliers from a busy host are all fine). j is the largest index whose coverage reaches the asked
// confidence; below 6 samples no j reaches 95 %, and the interval is unknown.
//
// The rule: stop after call n when n >= floor and both ends of the 95 % interval lie within `target` (0.5 %) of the
// median; never past the ceiling (the request's num_perf_trials). Every check of the timed phase stays within the
// floor (eval/timed_calls.h: the fresh sets, the null calls, most fetched calls), so stopping early never skips one.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

namespace kgym {

struct MedianInterval {
  bool known = false;  // false below the sample count the confidence needs
  double lo = -1, median = -1, hi = -1;
  // The interval's larger side relative to the median: max(median - lo, hi - median) / median (-1 when unknown).
  double RelativeHalfWidth() const;
};

// The distribution-free interval of the median of `samples` at `confidence` (0 < confidence < 1).
MedianInterval MedianConfidenceInterval(std::vector<double> samples, double confidence = 0.95);

// The 0-based index j-1 of the interval's lower order statistic for n samples at `confidence` (the upper one is n-j);
// -1 when n is too small for any.
int MedianIntervalRank(int n, double confidence = 0.95);

struct StopRule {
  int floor = 20;         // calls before the first check (>= 6)
  double target = 0.005;  // both ends of the interval within this fraction of the median
  double confidence = 0.95;
};

// True when timing may stop after these calls (their supervisor brackets, in order).
bool EnoughCalls(const StopRule& rule, const std::vector<double>& samples_ms);

}  // namespace kgym
