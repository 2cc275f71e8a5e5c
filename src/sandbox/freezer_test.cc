#include "sandbox/freezer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/process_stats.h"

namespace kgym {
namespace {

[[noreturn]] void Burn() {
  volatile uint64_t x = 0;
  while (true) x = x + 1;
}

// A worker-like tree: a group leader (it may first join `cgroup`) with a CPU-burning child, and a grandchild that left
// the group with setsid (what a candidate escaping a process-group stop would do). Returns the leader; *pids gets the
// three burners' pids through a pipe.
pid_t StartTree(const std::string& cgroup, std::vector<pid_t>* pids) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    if (!cgroup.empty()) {
      FILE* f = std::fopen((cgroup + "/cgroup.procs").c_str(), "w");
      if (f) {
        std::fputs("0", f);
        std::fclose(f);
      }
    }
    if (::fork() == 0) {
      if (::fork() == 0) {
        ::setsid();
        const pid_t me = ::getpid();
        (void)!::write(fds[1], &me, sizeof me);
        Burn();
      }
      const pid_t me = ::getpid();
      (void)!::write(fds[1], &me, sizeof me);
      Burn();
    }
    const pid_t me = ::getpid();
    (void)!::write(fds[1], &me, sizeof me);
    Burn();
  }
  ::close(fds[1]);
  for (int i = 0; i < 3; ++i) {
    pid_t p = -1;
    if (::read(fds[0], &p, sizeof p) == sizeof p) pids->push_back(p);
  }
  ::close(fds[0]);
  return leader;
}

int64_t TreeCpuNs(const std::vector<pid_t>& pids) {
  int64_t total = 0;
  for (pid_t p : pids) total += std::max<int64_t>(0, ProcessCpuNs(p));
  return total;
}

void EndTree(pid_t leader, const std::vector<pid_t>& pids) {
  ::kill(-leader, SIGKILL);
  for (pid_t p : pids) ::kill(p, SIGKILL);
  ::waitpid(leader, nullptr, 0);
}

// Frozen: no process of the tree gets CPU time; thawed: they all run again.
void ExpectFreezesTree(WorkerFreezer* f, const std::vector<pid_t>& pids) {
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_TRUE(f->Freeze());
  EXPECT_TRUE(f->frozen());
  EXPECT_TRUE(f->Freeze());  // idempotent
  const int64_t frozen_at = TreeCpuNs(pids);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_LT(TreeCpuNs(pids) - frozen_at, 5'000'000) << "a frozen process kept running";
  f->Thaw();
  EXPECT_FALSE(f->frozen());
  std::vector<int64_t> before;
  for (pid_t p : pids) before.push_back(ProcessCpuNs(p));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (size_t i = 0; i < pids.size(); ++i)
    while (ProcessCpuNs(pids[i]) - before[i] < 10'000'000 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (size_t i = 0; i < pids.size(); ++i)
    EXPECT_GE(ProcessCpuNs(pids[i]) - before[i], 10'000'000) << "process " << i << " did not run after the thaw";
}

TEST(FreezerTest, SignalsStopTheWholeTree) {
  std::vector<pid_t> pids;
  const pid_t leader = StartTree("", &pids);
  ASSERT_GT(leader, 0);
  {
    WorkerFreezer f(leader, "");
    EXPECT_EQ(f.mode(), FreezeMode::kSignals);
    ExpectFreezesTree(&f, pids);
    ASSERT_TRUE(f.Freeze());
  }  // the destructor thaws: a worker is never left stopped
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (pid_t p : pids) {
    const int64_t t0 = ProcessCpuNs(p);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ProcessCpuNs(p) == t0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_GT(ProcessCpuNs(p), t0);
  }
  EndTree(leader, pids);
}

TEST(FreezerTest, CgroupStopsTheWholeTree) {
  const std::string cgroup = NewWorkerCgroup();
  if (cgroup.empty()) GTEST_SKIP() << "no cgroup v2 freezer here (mode " << FreezeModeName(DefaultFreezeMode()) << ")";
  std::vector<pid_t> pids;
  const pid_t leader = StartTree(cgroup, &pids);
  ASSERT_GT(leader, 0);
  {
    WorkerFreezer f(leader, cgroup);
    EXPECT_EQ(f.mode(), FreezeMode::kCgroup);
    ExpectFreezesTree(&f, pids);
    EndTree(leader, pids);
  }  // removes the cgroup once its processes are gone
  EXPECT_NE(::access(cgroup.c_str(), F_OK), 0) << cgroup << " was left behind";
}

TEST(FreezerTest, KillEndsAFrozenTree) {
  std::vector<pid_t> pids;
  const pid_t leader = StartTree("", &pids);
  WorkerFreezer f(leader, "");
  ASSERT_TRUE(f.Freeze());
  ::kill(-leader, SIGKILL);  // what WorkerSession::Kill does
  int status = 0;
  ASSERT_EQ(::waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(status));
  for (pid_t p : pids) ::kill(p, SIGKILL);
}

}  // namespace
}  // namespace kgym
