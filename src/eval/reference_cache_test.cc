#include "eval/reference_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

namespace kgym {
namespace {

// Reference data holding `bytes` bytes of trial outputs.
std::shared_ptr<ReferenceData> DataOf(size_t bytes, const std::string& error_kind = "") {
  auto d = std::make_shared<ReferenceData>();
  d->error_kind = error_kind;
  ReferenceTrial t;
  Value v;
  v.is_tensor = true;
  v.tensor.SetBytes(std::string(bytes, '\1'));
  t.outputs.push_back(v);
  d->trials.push_back(t);
  return d;
}

TEST(ReferenceCacheTest, ComputesOnceAndKeeps) {
  ReferenceCache cache(1 << 20);
  int runs = 0;
  auto compute = [&] {
    ++runs;
    return DataOf(100);
  };
  auto a = cache.Get("k", compute);
  auto b = cache.Get("k", compute);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(a, b);
  ASSERT_EQ(cache.Held().size(), 1u);
  EXPECT_EQ(cache.Held()[0], (std::pair<std::string, uint64_t>("k", 100)));
}

TEST(ReferenceCacheTest, ConcurrentCallersShareOneComputation) {
  ReferenceCache cache(1 << 20);
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<int> runs{0};
  auto compute = [&] {
    ++runs;
    gate.wait();
    return DataOf(10);
  };
  auto first = std::async(std::launch::async, [&] { return cache.Get("k", compute); });
  while (runs.load() == 0) std::this_thread::yield();  // the first caller is computing
  EXPECT_TRUE(cache.Held().empty());                   // not complete yet: not counted as kept
  auto second = std::async(std::launch::async, [&] { return cache.Get("k", compute); });
  go.set_value();
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(runs.load(), 1);
}

TEST(ReferenceCacheTest, InfrastructureFailuresAreNotKept) {
  ReferenceCache cache(1 << 20);
  int runs = 0;
  cache.Get("k", [&] {
    ++runs;
    return DataOf(10, "timeout");
  });
  EXPECT_TRUE(cache.Held().empty());
  auto again = cache.Get("k", [&] {
    ++runs;
    return DataOf(10);
  });
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(again->error_kind.empty());
}

TEST(ReferenceCacheTest, BrokenReferencesAreKept) {
  ReferenceCache cache(1 << 20);
  int runs = 0;
  auto compute = [&] {
    ++runs;
    return DataOf(10, "invalid");
  };
  cache.Get("k", compute);
  cache.Get("k", compute);
  EXPECT_EQ(runs, 1);
}

TEST(ReferenceCacheTest, LeastRecentlyUsedDroppedBeyondBudgetNewestAlwaysKept) {
  ReferenceCache cache(250);
  auto a = cache.Get("a", [] { return DataOf(100); });
  cache.Get("b", [] { return DataOf(100); });
  EXPECT_FALSE(cache.RoomForAnother());        // 200 + 100 > 250
  cache.Get("a", [] { return DataOf(100); });  // used again: "b" is now the least recently used
  cache.Get("c", [] { return DataOf(100); });  // 300 > 250: "b" goes
  std::vector<std::string> keys;
  for (const auto& [k, n] : cache.Held()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c"}));
  cache.Get("d", [] { return DataOf(100); });  // "a" goes now
  keys.clear();
  for (const auto& [k, n] : cache.Held()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(a->Bytes(), 100u);                     // a caller holding a dropped entry keeps it
  cache.Get("huge", [] { return DataOf(1000); });  // larger than the budget: kept alone
  keys.clear();
  for (const auto& [k, n] : cache.Held()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"huge"}));
}

TEST(ReferenceCacheTest, RoomForAnotherAsLargeAsTheLargest) {
  ReferenceCache cache(1000);
  EXPECT_TRUE(cache.RoomForAnother());
  cache.Get("a", [] { return DataOf(100); });
  cache.Get("b", [] { return DataOf(400); });
  EXPECT_TRUE(cache.RoomForAnother());  // 500 + 400 <= 1000
  cache.Get("c", [] { return DataOf(200); });
  EXPECT_FALSE(cache.RoomForAnother());  // 700 + 400 > 1000
  EXPECT_FALSE(cache.Touch("d"));
  EXPECT_TRUE(cache.Touch("a"));               // "b" is now the least recently used
  cache.Get("e", [] { return DataOf(400); });  // 700 + 400 > 1000: "b" goes
  std::vector<std::string> keys;
  for (const auto& [k, n] : cache.Held()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c", "e"}));
}

// A wanted entry stays past the budget (the scheduler's next jobs need it) and goes once no owner wants it.
TEST(ReferenceCacheTest, WantedEntriesOutliveTheBudgetUntilUnwanted) {
  ReferenceCache cache(150);
  int runs = 0;
  auto big = [&] {
    ++runs;
    return DataOf(100);
  };
  cache.Want("cuda:0", {"big"});
  cache.Want("cuda:1", {"big", "x"});
  cache.Get("big", big);
  cache.Get("other", [] { return DataOf(100); });  // 200 > 150 bytes, yet "big" is wanted
  EXPECT_EQ(cache.Held().size(), 2u);
  cache.Get("third", [] { return DataOf(60); });  // "other" is neither wanted nor the newest: dropped
  auto held = cache.Held();
  std::set<std::string> keys;
  for (const auto& [k, b] : held) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"big", "third"}));
  cache.Want("cuda:0", {});
  EXPECT_TRUE(cache.Touch("big"));  // cuda:1 still wants it
  cache.Get("big", big);
  EXPECT_EQ(runs, 1);
  cache.Want("cuda:1", {"x"});  // unwanted now: 160 bytes trim to the budget (the newest, "big", stays)
  held = cache.Held();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].first, "big");
}

}  // namespace
}  // namespace kgym
