#include "eval/timing_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kgym {
namespace {

TEST(TimingLockTest, OneHolderPerDevice) {
  TimingLock locks;
  auto held = locks.Acquire("cuda:0");
  ASSERT_TRUE(held.owns_lock());
  bool other_thread_got_it = true;
  std::thread([&] { other_thread_got_it = locks.TryAcquire("cuda:0").owns_lock(); }).join();
  EXPECT_FALSE(other_thread_got_it);
  held.unlock();
  std::thread([&] { other_thread_got_it = locks.TryAcquire("cuda:0").owns_lock(); }).join();
  EXPECT_TRUE(other_thread_got_it);
}

TEST(TimingLockTest, DevicesAreIndependent) {
  TimingLock locks;
  auto gpu0 = locks.Acquire("cuda:0");
  bool got = false;
  std::thread([&] { got = locks.TryAcquire("cuda:1").owns_lock() && locks.TryAcquire("cpu").owns_lock(); }).join();
  EXPECT_TRUE(got);
}

TEST(TimingLockTest, HoldersOfOneDeviceNeverOverlap) {
  TimingLock locks;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto l = locks.Acquire("cuda:0");
        int now = ++inside;
        most = std::max(most.load(), now);
        --inside;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
}

TEST(TimedHoldTest, BooksAcquisitionsWaitAndHold) {
  TimingLock locks;
  LockUse use;
  {
    TimedHold h(&locks, "cuda:0", &use);
    EXPECT_FALSE(locks.TryAcquire("cuda:0").owns_lock());  // held
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    h.Release();
    EXPECT_TRUE(locks.TryAcquire("cuda:0").owns_lock());  // released before the hold's end
    h.Release();                                          // a second release books nothing
  }
  EXPECT_EQ(use.acquisitions, 1);
  EXPECT_GE(use.hold_s, 0.020);  // a lower bound: the hold spanned the sleep
  const double first_hold = use.hold_s;
  {
    auto other = locks.Acquire("cuda:0");  // held by someone else while the second hold waits
    std::thread t([&] { TimedHold h(&locks, "cuda:0", &use); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    other.unlock();
    t.join();
  }
  EXPECT_EQ(use.acquisitions, 2);
  EXPECT_GT(use.wait_s, 0.0);
  EXPECT_GE(use.hold_s, first_hold);
  const nlohmann::json j = use.ToJson();
  EXPECT_EQ(j["acquisitions"], 2);
  EXPECT_TRUE(j["hold"].is_object());
  // The first acquisition and the last release, on the wall clock: the two holds lie between them.
  ASSERT_TRUE(j.contains("first_at") && j.contains("last_at"));
  EXPECT_GE(j["last_at"].get<double>() - j["first_at"].get<double>(), use.hold_s - 1e-3);
  EXPECT_FALSE(LockUse{}.ToJson().contains("first_at"));
  // Each hold on its own: the first released before the second was taken, both inside first_at .. last_at.
  ASSERT_EQ(j["holds"].size(), 2u);
  const auto h0 = j["holds"][0].get<std::vector<double>>(), h1 = j["holds"][1].get<std::vector<double>>();
  EXPECT_EQ(h0[0], j["first_at"].get<double>());
  EXPECT_LE(h0[0], h0[1]);
  EXPECT_LE(h0[1], h1[0]);
  EXPECT_LE(h1[0], h1[1]);
  EXPECT_EQ(h1[1], j["last_at"].get<double>());
}

TEST(QuietTimingTest, OffNeverWaits) {
  TimingLock locks;  // quiet timing off
  LockUse use;
  TimedHold h(&locks, "cuda:0", &use);
  EXPECT_FALSE(locks.quiet());
  EXPECT_EQ(locks.AwaitQuiet("cuda:0"), 0);  // returns while the hold is held
}

TEST(QuietTimingTest, StepsWaitForTheHoldThatIsHeldThenGo) {
  TimingLock locks(/*quiet=*/true);
  EXPECT_EQ(locks.AwaitQuiet("cuda:0"), 0);  // nothing held: at once
  LockUse a, b;
  auto first = std::make_unique<TimedHold>(&locks, "cuda:0", &a);
  EXPECT_EQ(locks.AwaitQuiet("cuda:1"), 0);  // another device is not held
  std::atomic<bool> went{false};
  std::thread step([&] {
    locks.AwaitQuiet("cuda:0");
    went = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(went.load());               // still held: the step waits
  first.reset();                           // released ...
  TimedHold second(&locks, "cuda:0", &b);  // ... and held again at once: the waiting step goes all the same
  step.join();
  EXPECT_TRUE(went.load());
  // A step that arrives during the second hold waits for its end.
  std::atomic<bool> went2{false};
  std::thread step2([&] {
    locks.AwaitQuiet("cuda:0");
    went2 = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(went2.load());
  second.Release();
  step2.join();
  EXPECT_TRUE(went2.load());
}

// A worker stand-in that records its state; `log` gets "freeze <name>" / "thaw <name>" in order.
class FakeWorker : public Freezable {
 public:
  FakeWorker(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  bool Freeze() override {
    frozen = true;
    log_->push_back("freeze " + name_);
    return true;
  }
  void Thaw() override {
    frozen = false;
    log_->push_back("thaw " + name_);
  }
  bool frozen = false;

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

TEST(ExclusiveDeviceTest, AHoldFreezesTheDevicesOtherWorkersUntilItsRelease) {
  TimingLock locks;
  std::vector<std::string> log;
  FakeWorker mine("mine", &log), other("other", &log), elsewhere("elsewhere", &log);
  auto e1 = locks.Enlist("cuda:0", &mine);
  auto e2 = locks.Enlist("cuda:0", &other);
  auto e3 = locks.Enlist("cuda:1", &elsewhere);
  ASSERT_TRUE(e1 && e2 && e3);
  LockUse use;
  {
    TimedHold hold(&locks, "cuda:0", &use, &mine);
    EXPECT_FALSE(mine.frozen);       // the holder's own worker runs its timed calls
    EXPECT_TRUE(other.frozen);       // a neighbour on the device is stopped
    EXPECT_FALSE(elsewhere.frozen);  // another device is not touched
    // A worker made during the hold is stopped at once.
    FakeWorker late("late", &log);
    {
      auto e4 = locks.Enlist("cuda:0", &late);
      EXPECT_TRUE(late.frozen);
    }
    EXPECT_FALSE(late.frozen);  // leaving, it is thawed
  }
  EXPECT_FALSE(other.frozen);
  EXPECT_EQ(use.neighbours_frozen, 1);
  EXPECT_EQ(use.ToJson()["neighbours_frozen"], 1);
  // The next hold, by the neighbour: the first holder's worker is frozen now, after the thaw of the last hold.
  {
    TimedHold hold(&locks, "cuda:0", &use, &other);
    EXPECT_TRUE(mine.frozen);
    EXPECT_FALSE(other.frozen);
  }
  const std::vector<std::string> want = {"freeze other", "freeze late", "thaw late",
                                         "thaw other",   "freeze mine", "thaw mine"};
  EXPECT_EQ(log, want);
}

TEST(ExclusiveDeviceTest, ReleaseThawsBeforeTheNextHolderFreezes) {
  TimingLock locks;
  std::vector<std::string> log;
  FakeWorker a("a", &log), b("b", &log);
  auto ea = locks.Enlist("cpu", &a);
  auto eb = locks.Enlist("cpu", &b);
  LockUse ua, ub;
  auto first = std::make_unique<TimedHold>(&locks, "cpu", &ua, &a);
  std::thread second([&] { TimedHold h(&locks, "cpu", &ub, &b); });  // waits for the lock with b frozen
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(b.frozen);
  first.reset();
  second.join();
  // b was thawed before its own hold froze a; nothing froze the holder of a hold.
  const std::vector<std::string> want = {"freeze b", "thaw b", "freeze a", "thaw a"};
  EXPECT_EQ(log, want);
  EXPECT_FALSE(a.frozen || b.frozen);
}

TEST(ExclusiveDeviceTest, OffEnlistsNothing) {
  TimingLock locks(/*quiet=*/false, /*freeze=*/false);
  std::vector<std::string> log;
  FakeWorker a("a", &log), b("b", &log);
  EXPECT_EQ(locks.Enlist("cpu", &a), nullptr);
  auto eb = locks.Enlist("cpu", &b);
  LockUse use;
  TimedHold h(&locks, "cpu", &use, &b);
  EXPECT_TRUE(log.empty());
}

// A worker stand-in whose stop takes two calls, as a real one's does: StartFreeze asks, AwaitFrozen waits.
class TwoStepWorker : public Freezable {
 public:
  TwoStepWorker(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  bool Freeze() override {
    StartFreeze();
    return AwaitFrozen(std::chrono::steady_clock::now());
  }
  void Thaw() override { log_->push_back("thaw " + name_); }
  void StartFreeze() override { log_->push_back("start " + name_); }
  bool AwaitFrozen(std::chrono::steady_clock::time_point) override {
    log_->push_back("await " + name_);
    return true;
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

// A hold's cost is its slowest neighbour's stop, not the sum: every neighbour is asked before any is awaited.
TEST(ExclusiveDeviceTest, AHoldAsksEveryNeighbourToStopBeforeAwaitingAny) {
  TimingLock locks;
  std::vector<std::string> log;
  TwoStepWorker mine("mine", &log), a("a", &log), b("b", &log), c("c", &log);
  auto e0 = locks.Enlist("cuda:0", &mine);
  auto e1 = locks.Enlist("cuda:0", &a);
  auto e2 = locks.Enlist("cuda:0", &b);
  auto e3 = locks.Enlist("cuda:0", &c);
  LockUse use;
  {
    TimedHold hold(&locks, "cuda:0", &use, &mine);
    ASSERT_EQ(log.size(), 6u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(log[i].rfind("start ", 0), 0u) << log[i];
    for (int i = 3; i < 6; ++i) EXPECT_EQ(log[i].rfind("await ", 0), 0u) << log[i];
    for (const auto& l : log) EXPECT_EQ(l.find("mine"), std::string::npos);  // the holder's own worker runs
  }
  EXPECT_EQ(use.neighbours_frozen, 3);
  EXPECT_EQ(use.freeze_incomplete, 0);
}

TEST(TimingLockTest, DeviceOfRequest) {
  EvalRequest req;
  req.device = "cuda";
  req.device_index = 3;
  EXPECT_EQ(TimingLock::DeviceOf(req), "cuda:3");
  req.device = "cpu";
  EXPECT_EQ(TimingLock::DeviceOf(req), "cpu");
}

}  // namespace
}  // namespace kgym
