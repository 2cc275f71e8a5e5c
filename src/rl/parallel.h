// Splitting one flat pass over rows across a few threads, for the large batches of kgym::rl (internal).
// The parts are contiguous and each is computed exactly as in one thread, so callers whose rows are independent
// get results that do not depend on the split or on the machine's core count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace kgym::rl::detail {

// Part boundaries for n rows: {0, c1, ..., n}, one part per min_rows rows at most, and no more parts than the
// machine has cores (at most 8). Batches below 2·min_rows are one part.
inline std::vector<size_t> SplitRows(size_t n, size_t min_rows) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t parts = std::min<size_t>({hw, size_t{8}, std::max<size_t>(1, n / std::max<size_t>(1, min_rows))});
  std::vector<size_t> cut;
  for (size_t t = 0; t < parts; ++t) cut.push_back(n * t / parts);
  cut.push_back(n);
  return cut;
}

// Runs fn(part, begin, end) for every non-empty part [cut[p], cut[p+1]); the calling thread takes part 0.
template <typename Fn>
void RunParts(const std::vector<size_t>& cut, Fn&& fn) {
  std::vector<std::thread> pool;
  for (size_t p = 1; p + 1 < cut.size(); ++p) {
    if (cut[p] < cut[p + 1]) pool.emplace_back([&fn, &cut, p] { fn(p, cut[p], cut[p + 1]); });
  }
  if (cut.size() > 1 && cut[0] < cut[1]) fn(size_t{0}, cut[0], cut[1]);
  for (auto& th : pool) th.join();
}

}  // namespace kgym::rl::detail
