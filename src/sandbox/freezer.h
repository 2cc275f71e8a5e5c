// Freezer: stops every process of one worker and lets them go on again, from outside the worker. A device's timing
// lock (eval/timing_lock.h) freezes the device's other workers for the length of a timed hold, so no process of ours
// launches work on that device while another's calls are timed.
//
// Two ways, chosen once per supervisor process (FreezeMode):
// - cgroup (cgroup v2 where this process may make cgroups, as on the GPU machine): each worker's outside process
//   joins a cgroup of its own before it forks the rest of the worker (the policy's "cgroup", made by the supervisor
//   before the fork), so the cgroup holds the worker and everything it ever starts, whatever they do; writing
//   cgroup.freeze stops them all, cgroup.events says when they are.
// - signals (elsewhere: CI's VMs have no cgroups): SIGSTOP to the worker's process group (its outside process leads
//   one) and to every process of its tree (/proc, every thread's children, walked until no new one appears);
//   SIGCONT to the same processes after. In a PID namespace nothing escapes the tree (orphans go to the namespace's
//   init, which is in it); without one, a process that double-forks and leaves the group escapes.
// Either way Freeze() returns once every process it reached is stopped (or after kFreezeWaitUs): a process stops at
// its next return to user space, never inside a system call or the GPU driver, so it holds no lock of the kernel's
// or of another process's. Work already queued on a GPU by a frozen process still runs: freezing stops launches,
// not kernels (eval/timing_lock.h says what a hold does about that).
//
// Thread-safe: Freeze() and Thaw() may be called from any thread, including while another thread talks to the
// worker. A worker is never left stopped by the destructor.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>

namespace kgym {

enum class FreezeMode { kOff, kSignals, kCgroup };
const char* FreezeModeName(FreezeMode m);

// The way this process freezes workers, decided on first use: $KGYM_FREEZER ("cgroup", "signals" or "off") when set,
// else cgroup where a cgroup v2 directory can be made under this process's own cgroup, else signals. `root` receives
// the directory the workers' cgroups are made in (cgroup mode only).
FreezeMode DefaultFreezeMode(std::string* root = nullptr);

// A fresh cgroup directory for one worker, under the root of DefaultFreezeMode (cgroup mode); "" when there is none.
// Removed by the WorkerFreezer that is given it (once its processes are gone), else at exit with the root; roots of
// supervisors that died without their exit (SIGKILL) are removed by the next one that makes its own.
std::string NewWorkerCgroup();

// Kills every process in this process's worker cgroups (cgroup.kill, else SIGKILL to each listed process) and
// removes the cgroups and their root, waiting up to a second for them to empty. For an exit that cannot wait for the
// workers' sessions to end (the stop watchdog of `kgym serve` / `kgym worker`); nothing in cgroup-less modes.
void KillWorkerCgroups();

// How long Freeze() waits for the processes it signalled to stop.
constexpr int kFreezeWaitUs = 200000;

// What a device's timing lock freezes (eval/timing_lock.h): a worker session, or a test's stand-in.
// Freeze() is StartFreeze() then AwaitFrozen(): a hold that stops many workers asks every one first and then waits for
// them together, so its cost is the slowest worker's stop, not the sum of them (16 workers one after the other took
// 0.29 s per hold on an H100, 2026-12-07). The defaults suit a stand-in whose Freeze() is instant.
class Freezable {
 public:
  virtual ~Freezable() = default;
  virtual bool Freeze() = 0;  // true when every process it reached stopped
  virtual void Thaw() = 0;
  // Asks every process to stop and returns at once.
  virtual void StartFreeze() {}
  // After StartFreeze: waits until every process is stopped (true) or `until` passes (false).
  virtual bool AwaitFrozen(std::chrono::steady_clock::time_point until) {
    (void)until;
    return Freeze();
  }
};

class WorkerFreezer {
 public:
  // `pid`: the worker's outside process (leader of its process group). `cgroup`: the directory it joined ("" =
  // signals).
  WorkerFreezer(pid_t pid, std::string cgroup);
  ~WorkerFreezer();  // thaws; removes the cgroup directory when its processes are gone (else leaves it)
  WorkerFreezer(const WorkerFreezer&) = delete;
  WorkerFreezer& operator=(const WorkerFreezer&) = delete;

  // Stops the worker's processes; true when every one it reached is stopped. Idempotent. The same as StartFreeze()
  // and then AwaitFrozen(kFreezeWaitUs from now).
  bool Freeze();
  void StartFreeze();
  bool AwaitFrozen(std::chrono::steady_clock::time_point until);
  void Thaw();
  bool frozen() const;
  FreezeMode mode() const { return cgroup_.empty() ? FreezeMode::kSignals : FreezeMode::kCgroup; }

 private:
  void SignalTree();

  const pid_t pid_;
  const std::string cgroup_;
  mutable std::mutex mu_;
  bool frozen_ = false;
  bool cgroup_write_failed_ = false;  // cgroup: StartFreeze could not write cgroup.freeze
  std::set<pid_t> stopped_;           // signals: the processes that got SIGSTOP (they get SIGCONT)
};

}  // namespace kgym
