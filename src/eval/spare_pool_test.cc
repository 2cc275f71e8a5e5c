#include "eval/spare_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <set>
#include <thread>
#include <vector>

namespace kgym {
namespace {

using std::chrono::steady_clock;

struct FakeWorker {
  explicit FakeWorker(int id, std::atomic<int>* alive) : id(id), alive(alive) { ++*alive; }
  ~FakeWorker() { --*alive; }
  int id;
  std::atomic<int>* alive;
};

// Starts workers numbered 1, 2, ...; built held, a start waits until the test calls Release().
struct Starter {
  explicit Starter(bool held = false) {
    if (held) gate = release.get_future().share();
  }
  void Release() { release.set_value(); }
  SparePool<FakeWorker>::StartFn Fn() {
    return [this](std::unique_ptr<FakeWorker>* out) {
      if (gate.valid()) gate.wait();
      int id = ++started;
      if (fail) return Status::Unavailable("no worker");
      *out = std::make_unique<FakeWorker>(id, &alive);
      return Status::Ok();
    };
  }
  std::atomic<int> started{0}, alive{0};
  std::promise<void> release;
  std::shared_future<void> gate;
  bool fail = false;
};

steady_clock::time_point Soon() { return steady_clock::now() + std::chrono::seconds(30); }

TEST(SparePoolTest, FirstTakeIsFreshAndStartsASpare) {
  Starter st(/*held=*/true);
  SparePool<FakeWorker> pool;
  std::unique_ptr<FakeWorker> w;
  EXPECT_EQ(pool.Take("policy", Soon(), st.Fn(), &w), "fresh");
  EXPECT_EQ(w, nullptr);
  st.Release();
  // The spare started by the first Take is still on its way or ready: either way the second Take gets it.
  std::string how = pool.Take("policy", Soon(), st.Fn(), &w);
  EXPECT_TRUE(how == "spare" || how == "spare_waited") << how;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->id, 1);
}

TEST(SparePoolTest, WaitsForTheSpareBeingStarted) {
  Starter st(/*held=*/true);
  SparePool<FakeWorker> pool;
  std::unique_ptr<FakeWorker> w;
  pool.Take("policy", Soon(), st.Fn(), &w);  // starts spare 1, held at the gate
  auto second = std::async(std::launch::async, [&] {
    std::unique_ptr<FakeWorker> mine;
    std::string how = pool.Take("policy", Soon(), st.Fn(), &mine);
    return std::make_pair(how, mine ? mine->id : 0);
  });
  st.Release();
  auto [how, id] = second.get();
  EXPECT_EQ(id, 1);  // the one that was starting, not a second start beside it
  EXPECT_TRUE(how == "spare_waited" || how == "spare") << how;
}

TEST(SparePoolTest, KeysAreSeparate) {
  Starter st;
  SparePool<FakeWorker> pool;
  std::unique_ptr<FakeWorker> w;
  pool.Take("a", Soon(), st.Fn(), &w);
  std::string how = pool.Take("b", Soon(), st.Fn(), &w);
  EXPECT_EQ(how, "fresh");  // the spare being made for "a" is not handed to "b"
  EXPECT_EQ(w, nullptr);
}

TEST(SparePoolTest, FailedStartsAreDropped) {
  Starter st;
  st.fail = true;
  SparePool<FakeWorker> pool;
  std::unique_ptr<FakeWorker> w;
  EXPECT_EQ(pool.Take("policy", Soon(), st.Fn(), &w), "fresh");
  EXPECT_EQ(pool.Take("policy", Soon(), st.Fn(), &w), "fresh");  // waited for the failed start, got nothing
  EXPECT_EQ(w, nullptr);
}

// With depth 3 the first Take starts three spares; three Takes waiting at once each count on one of them and get
// distinct workers, while a fourth, with every start counted on, starts its own.
TEST(SparePoolTest, DepthKeepsSeveralStartsUnderWayAndEachWaiterGetsItsOwn) {
  Starter st(/*held=*/true);
  SparePool<FakeWorker> pool(3);
  std::unique_ptr<FakeWorker> w;
  EXPECT_EQ(pool.Take("policy", Soon(), st.Fn(), &w), "fresh");
  std::vector<std::future<std::pair<std::string, int>>> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.push_back(std::async(std::launch::async, [&] {
      std::unique_ptr<FakeWorker> mine;
      std::string how = pool.Take("policy", Soon(), st.Fn(), &mine);
      return std::make_pair(how, mine ? mine->id : 0);
    }));
  while (pool.Waiting() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto fourth = std::async(std::launch::async, [&] {
    std::unique_ptr<FakeWorker> mine;
    return std::make_pair(pool.Take("policy", Soon(), st.Fn(), &mine), mine == nullptr);
  });
  // It does not wait: the starts are still held at the gate when it answers.
  ASSERT_EQ(fourth.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(fourth.get(), std::make_pair(std::string("fresh"), true));
  st.Release();
  std::set<int> ids;
  for (auto& f : waiters) {
    auto [how, id] = f.get();
    EXPECT_TRUE(how == "spare_waited" || how == "spare") << how;
    EXPECT_GT(id, 0);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 3u);  // three distinct workers
}

// Depth is a ceiling: once the starts are done the pool holds `depth` idle spares, never more.
TEST(SparePoolTest, IdleSparesStopAtTheDepth) {
  Starter st;
  SparePool<FakeWorker> pool(2);
  std::unique_ptr<FakeWorker> w;
  pool.Take("policy", Soon(), st.Fn(), &w);
  for (int i = 0; i < 200 && pool.Idle() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(pool.Idle(), 2u);
  EXPECT_EQ(pool.Take("policy", Soon(), st.Fn(), &w), "spare");
  for (int i = 0; i < 200 && pool.Idle() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(pool.Idle(), 2u);  // the one taken was replaced, once
  EXPECT_EQ(st.started.load(), 3);
}

TEST(SparePoolTest, DestructorEndsIdleAndStartingSpares) {
  Starter st(/*held=*/true);
  {
    SparePool<FakeWorker> pool;
    std::unique_ptr<FakeWorker> w;
    pool.Take("a", Soon(), st.Fn(), &w);
    st.Release();
    pool.Take("b", Soon(), st.Fn(), &w);
  }
  EXPECT_EQ(st.alive.load(), 0);
}

}  // namespace
}  // namespace kgym
