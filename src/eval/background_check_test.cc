#include "eval/background_check.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kgym {
namespace {

TEST(BackgroundCheckTest, AllPassing) {
  BackgroundCheck c;
  std::vector<int> seen;
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c.Submit([&seen, i] { return seen.push_back(i), true; }));
  EXPECT_TRUE(c.Wait());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));  // one at a time, in order
  EXPECT_EQ(c.checks(), 5);
  EXPECT_FALSE(c.Failed());
}

TEST(BackgroundCheckTest, RunsOffTheCallersThreadWhileTheCallerGoesOn) {
  BackgroundCheck c;
  std::mutex mu;
  std::condition_variable cv;
  bool caller_went_on = false;
  std::thread::id ran_on;
  c.Submit([&] {
    ran_on = std::this_thread::get_id();
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return caller_went_on; });  // finishes only after the caller got past Submit
    return true;
  });
  {
    std::lock_guard<std::mutex> l(mu);
    caller_went_on = true;
  }
  cv.notify_all();
  EXPECT_TRUE(c.Wait());
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(BackgroundCheckTest, AtMostOneOutstanding) {
  BackgroundCheck c;
  std::atomic<int> running{0}, most{0};
  for (int i = 0; i < 20; ++i)
    c.Submit([&] {
      const int now = ++running;
      most = std::max(most.load(), now);
      std::this_thread::yield();
      --running;
      return true;
    });
  EXPECT_TRUE(c.Wait());
  EXPECT_EQ(most.load(), 1);
}

TEST(BackgroundCheckTest, AFailedCheckEndsTheChecking) {
  BackgroundCheck c;
  int ran = 0;
  EXPECT_TRUE(c.Submit([&] { return ++ran, true; }));
  EXPECT_TRUE(c.Submit([&] { return ++ran, false; }));  // started: its result is not known yet
  EXPECT_FALSE(c.Submit([&] { return ++ran, true; }));  // collects the failure and drops this one
  EXPECT_FALSE(c.Submit([&] { return ++ran, true; }));
  EXPECT_EQ(ran, 2);
  EXPECT_TRUE(c.Failed());
  EXPECT_FALSE(c.Wait());
  EXPECT_EQ(c.checks(), 2);
}

TEST(BackgroundCheckTest, FailedPollsWithoutWaitingThenSeesTheResult) {
  BackgroundCheck c;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  c.Submit([&] {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return release; });
    return false;
  });
  EXPECT_FALSE(c.Failed());  // still running: not known to have failed
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_FALSE(c.Wait());
  EXPECT_TRUE(c.Failed());
}

TEST(BackgroundCheckTest, AThrowingCheckFailsAndRethrows) {
  BackgroundCheck c;
  c.Submit([]() -> bool { throw std::runtime_error("bad frame"); });
  EXPECT_THROW(c.Wait(), std::runtime_error);
  EXPECT_TRUE(c.Failed());
  EXPECT_FALSE(c.Submit([] { return true; }));
}

TEST(BackgroundCheckTest, DestructorWaitsForTheOutstandingCheck) {
  std::atomic<bool> finished{false};
  {
    BackgroundCheck c;
    c.Submit([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      finished = true;
      return true;
    });
  }
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace kgym
