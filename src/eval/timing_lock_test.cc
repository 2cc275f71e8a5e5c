#include "eval/timing_lock.h"

#include <gtest/gtest.h>

#include <atomic>
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
