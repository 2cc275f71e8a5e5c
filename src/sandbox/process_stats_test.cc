#include "sandbox/process_stats.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace kgym {
namespace {

TEST(ProcessStatsTest, ThreadsOfThisProcess) {
  const pid_t me = ::getpid();
  const int before = ProcessThreads(me);
  ASSERT_GE(before, 1);
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    volatile uint64_t x = 0;
    while (!stop) x = x + 1;  // burns CPU until told to stop
  });
  while (tid == 0) std::this_thread::yield();
  EXPECT_EQ(ProcessThreads(me), before + 1);
  EXPECT_TRUE(ThreadIds(me).count(tid.load()));
  const auto first = ThreadCpuNs(me);
  ASSERT_TRUE(first.count(tid.load()));
  int64_t seen = 0;
  while (seen <= 0) seen = ThreadCpuNs(me)[tid.load()] - first.at(tid.load());  // a running thread's time grows
  stop = true;
  t.join();
  EXPECT_EQ(ProcessThreads(me), before);
  EXPECT_FALSE(ThreadIds(me).count(tid.load()));
  EXPECT_GT(ProcessCpuNs(me), 0);
}

TEST(ProcessStatsTest, ChildrenAndMemory) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  bool found = false;
  for (pid_t c : ChildProcesses(::getpid())) found |= c == child;
  EXPECT_TRUE(found);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_GT(ProcessPeakPrivateBytes(::getpid()), 0u);
}

// A process that sleeps has no runnable thread and its settled reading is its clock; one that spins always has one,
// and its settled reading (taken after the longest wait) is not behind the clock read before it.
TEST(ProcessStatsTest, RunnableThreadsAndSettledReading) {
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  const pid_t spinner = ::fork();
  if (spinner == 0) {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  }
  ASSERT_GT(sleeper, 0);
  ASSERT_GT(spinner, 0);
  int runnable = -1;
  for (int i = 0; i < 20000 && runnable != 0; ++i) {  // until it reaches pause()
    runnable = RunnableThreads(sleeper);
    if (runnable != 0) ::usleep(100);
  }
  EXPECT_EQ(runnable, 0);
  EXPECT_EQ(SettledProcessCpuNs(sleeper, 2000), ProcessCpuNs(sleeper));
  EXPECT_EQ(RunnableThreads(spinner), 1);
  const int64_t before = ProcessCpuNs(spinner);
  EXPECT_GE(SettledProcessCpuNs(spinner, 2000), before);
  for (pid_t p : {sleeper, spinner}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  EXPECT_EQ(RunnableThreads(-1), -1);
  EXPECT_EQ(SettledProcessCpuNs(-1, 10), -1);
}

TEST(ProcessStatsTest, UnknownProcess) {
  EXPECT_EQ(ProcessThreads(-1), -1);
  EXPECT_EQ(ProcessCpuNs(-1), -1);
  EXPECT_TRUE(ThreadIds(0).empty());
  EXPECT_EQ(ProcessPeakPrivateBytes(0), 0u);
}

}  // namespace
}  // namespace kgym
