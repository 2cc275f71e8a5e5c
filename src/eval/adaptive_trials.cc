#include "eval/adaptive_trials.h"

#include <algorithm>
#include <cmath>

namespace kgym {

double MedianInterval::RelativeHalfWidth() const {
  if (!known || median <= 0) return -1;
  return std::max(median - lo, hi - median) / median;
}

int MedianIntervalRank(int n, double confidence) {
  if (n < 1 || !(confidence > 0 && confidence < 1)) return -1;
  const double tail = (1 - confidence) / 2;
  // P(B <= k) for B ~ Binomial(n, 1/2), summed in log space (n may be a few thousand).
  const double log_half_n = n * std::log(0.5);
  double cdf = 0;
  int best = -1;
  for (int k = 0; 2 * k < n; ++k) {
    cdf += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + log_half_n);
    if (cdf > tail) break;
    best = k;  // P(B <= k) <= tail: [x(k+1), x(n-k)] (1-based) has the coverage
  }
  return best;
}

MedianInterval MedianConfidenceInterval(std::vector<double> samples, double confidence) {
  MedianInterval out;
  const int n = static_cast<int>(samples.size());
  if (n == 0) return out;
  std::sort(samples.begin(), samples.end());
  out.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  const int k = MedianIntervalRank(n, confidence);
  if (k < 0) return out;
  out.known = true;
  out.lo = samples[k];
  out.hi = samples[n - 1 - k];
  return out;
}

bool EnoughCalls(const StopRule& rule, const std::vector<double>& samples_ms) {
  if (static_cast<int>(samples_ms.size()) < std::max(rule.floor, 1)) return false;
  const MedianInterval ci = MedianConfidenceInterval(samples_ms, rule.confidence);
  const double w = ci.RelativeHalfWidth();
  return ci.known && w >= 0 && w <= rule.target;
}

}  // namespace kgym
