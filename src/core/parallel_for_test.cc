#include "core/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace kgym {
namespace {

TEST(ParallelForTest, EveryItemOnceOnAtMostTheThreadsAsked) {
  std::vector<std::atomic<int>> seen(1000);
  std::mutex mu;
  std::set<std::thread::id> threads;
  ParallelFor(seen.size(), 3, [&](size_t i) {
    ++seen[i];
    std::lock_guard<std::mutex> l(mu);
    threads.insert(std::this_thread::get_id());
  });
  for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
  EXPECT_LE(threads.size(), 3u);
}

TEST(ParallelForTest, NoItemsAndOneThread) {
  int calls = 0;
  ParallelFor(0, 4, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  std::thread::id caller = std::this_thread::get_id(), ran;
  ParallelFor(1, 1, [&](size_t) { ran = std::this_thread::get_id(); });
  EXPECT_EQ(ran, caller);  // the calling thread is one of the threads
}

TEST(ParallelForTest, RangesCoverEachIndexOnce) {
  std::vector<size_t> cut = {0, 3, 3, 10, 17};  // an empty range among them
  std::vector<int> hits(17, 0);
  std::vector<int> part_of(17, -1);
  ParallelForRanges(cut, [&](size_t p, size_t b, size_t e) {
    EXPECT_LT(b, e);
    for (size_t i = b; i < e; ++i) {
      ++hits[i];
      part_of[i] = static_cast<int>(p);
    }
  });
  for (int h : hits) EXPECT_EQ(h, 1);
  EXPECT_EQ(part_of[0], 0);
  EXPECT_EQ(part_of[3], 2);
  EXPECT_EQ(part_of[16], 3);
}

TEST(ParallelForTest, EvenCuts) {
  EXPECT_EQ(EvenCuts(10, 100), (std::vector<size_t>{0, 10}));  // below min_per_part: one part
  EXPECT_EQ(EvenCuts(0, 1), (std::vector<size_t>{0, 0}));
  std::vector<size_t> cut = EvenCuts(1000, 10, 4);
  EXPECT_EQ(cut.front(), 0u);
  EXPECT_EQ(cut.back(), 1000u);
  EXPECT_LE(cut.size(), 5u);  // at most 4 parts, and no more than the machine's cores
  for (size_t p = 1; p < cut.size(); ++p) EXPECT_LE(cut[p - 1], cut[p]);
}

}  // namespace
}  // namespace kgym
