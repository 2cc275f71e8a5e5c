#include "eval/contention.h"

#include <algorithm>

namespace kgym {

double IdleNullBound(double idle_null_ms) {
  const double base = idle_null_ms > 0 ? idle_null_ms : 0.3;
  return std::max(2 * base, base + 0.25);
}

SharedCalls FindSharedCalls(const std::vector<double>& busy_ms, const std::vector<int>& sets,
                            std::vector<double>* set_least_ms) {
  SharedCalls out;
  const size_t n = busy_ms.size();
  out.shared.assign(n, false);
  if (n == 0) return out;
  std::vector<double>& least = *set_least_ms;
  std::vector<int> visits;
  for (size_t i = 0; i < n; ++i) {
    const int s = i < sets.size() ? std::max(0, sets[i]) : 0;
    if (static_cast<size_t>(s) >= least.size()) least.resize(s + 1, -1);
    if (static_cast<size_t>(s) >= visits.size()) visits.resize(s + 1, 0);
    if (least[s] < 0 || busy_ms[i] < least[s]) least[s] = busy_ms[i];
  }
  for (size_t i = 0; i < n; ++i) ++visits[i < sets.size() ? std::max(0, sets[i]) : 0];
  std::vector<double> sorted = busy_ms;
  std::sort(sorted.begin(), sorted.end());
  const double p10 = sorted[sorted.size() / 10];
  for (size_t i = 0; i < n; ++i) {
    const int s = i < sets.size() ? std::max(0, sets[i]) : 0;
    // A set met once in every attempt so far has no baseline of its own: the attempt's 10th percentile, with room for
    // an honest kernel whose time depends on its data.
    const double bound = visits[s] > 1 || least[s] < busy_ms[i] ? least[s] * (1 + kSharedSlack) + kSharedSlackMs
                                                                : p10 * (1 + kSharedSlackOne) + kSharedSlackMs;
    out.shared[i] = busy_ms[i] > bound;
    out.count += out.shared[i];
  }
  out.clean = out.count <= kSharedShare * static_cast<double>(n);
  return out;
}

std::vector<double> Unshared(const std::vector<double>& values, const SharedCalls& s) {
  std::vector<double> out;
  for (size_t i = 0; i < values.size(); ++i)
    if (i >= s.shared.size() || !s.shared[i]) out.push_back(values[i]);
  return out;
}

}  // namespace kgym
