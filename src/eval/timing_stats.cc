#include "eval/timing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kgym {

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TimingStats ComputeTimingStats(const std::vector<double>& samples_ms) {
  TimingStats s;
  s.samples_ms = samples_ms;
  s.n = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return s;
  s.median = Median(samples_ms);
  s.mean = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / s.n;
  auto [mn, mx] = std::minmax_element(samples_ms.begin(), samples_ms.end());
  s.min = *mn;
  s.max = *mx;
  double var = 0;
  for (double x : samples_ms) var += (x - s.mean) * (x - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(var / (s.n - 1)) : 0;
  return s;
}

double RepeatSpeedRatio(const std::vector<double>& first, const std::vector<double>& later) {
  if (first.empty() || later.empty()) return 1.0;
  double a = Median(first), b = Median(later);
  return a > 0 ? b / a : 1.0;
}

}  // namespace kgym
