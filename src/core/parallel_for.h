// Running N independent items on a few threads: the one helper kgym uses wherever a loop is split across threads
// (tensor comparison, RL batches, agent trajectories, skill verification).
//
// Contract:
// - ParallelFor(n, threads, fn) calls fn(i) exactly once for every i in [0, n), on at most `threads` threads, the
//   calling thread among them; items are handed out one at a time in increasing order, so a slow item does not hold
//   up a fixed share of the others. It returns when every call has returned.
// - ParallelForRanges(cut, fn) calls fn(part, begin, end) once for every non-empty range [cut[p], cut[p+1]), each on
//   a thread of its own (the calling thread takes part 0), and returns when all have returned. Each range is
//   computed exactly as one thread would, so results that depend only on the ranges do not depend on the machine.
// - EvenCuts(n, min_per_part, max_parts) gives the cuts {0, c1, ..., n} of at most max_parts nearly equal ranges, no
//   more than the machine has cores and none (but the only one) shorter than min_per_part.
// - fn must not throw (an exception on a helper thread ends the process, as any uncaught exception does).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace kgym {

inline std::vector<size_t> EvenCuts(size_t n, size_t min_per_part, size_t max_parts = 8) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t parts =
      std::min({cores, std::max<size_t>(1, max_parts), std::max<size_t>(1, n / std::max<size_t>(1, min_per_part))});
  std::vector<size_t> cut;
  for (size_t p = 0; p < parts; ++p) cut.push_back(n * p / parts);
  cut.push_back(n);
  return cut;
}

template <typename Fn>
void ParallelForRanges(const std::vector<size_t>& cut, Fn&& fn) {
  std::vector<std::thread> helpers;
  for (size_t p = 1; p + 1 < cut.size(); ++p)
    if (cut[p] < cut[p + 1]) helpers.emplace_back([&fn, &cut, p] { fn(p, cut[p], cut[p + 1]); });
  if (cut.size() > 1 && cut[0] < cut[1]) fn(size_t{0}, cut[0], cut[1]);
  for (auto& t : helpers) t.join();
}

template <typename Fn>
void ParallelFor(size_t n, int threads, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto drain = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  const size_t extra = std::min(static_cast<size_t>(std::max(1, threads)), std::max<size_t>(n, 1)) - 1;
  std::vector<std::thread> helpers;
  for (size_t t = 0; t < extra; ++t) helpers.emplace_back(drain);
  drain();
  for (auto& t : helpers) t.join();
}

}  // namespace kgym
