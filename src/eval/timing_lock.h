// TimingLock: one lock per device. Timing phases (the reference's and every candidate's timed calls, the decoy
// rule's grad-enabled call) on one device run one at a time, so no two timed calls ever share a GPU; loading,
// compiling and correctness of several evaluations still overlap.
//
// Thread-safe. Devices are named as in metadata ("cpu", "cuda:0", ...) and made on first use; they live as long as
// the TimingLock, which must outlive every lock it handed out.
//
// Quiet timing (off by default; `kgym serve --quiet-timing`): the other evaluations' steps of device work outside the
// lock (a load, a correctness trial, a kept output fetched, a reference's job) call AwaitQuiet
// before they start and wait while a timed hold is held, so the timed calls do not share the device with work started
// meanwhile. Without MPS a GPU time-slices between processes: a correctness trial started during a hold stretches the
// timed calls it meets (KernelBench level 2 on an H100: 2.76 ms kernels, 3.9 ms per call on a quiet device, 6.2 ms
// beside other evaluations). Steps already running go on (a hold never waits for them), nothing waits for quiet
// while its own evaluation holds the lock, and the steps that lead into the lock (timing sets sent, the worker
// readying its inputs) do not wait: held back, they left the lock idle between holds.
//
// Exclusive device time (on by default; `kgym serve --no-freeze-neighbours` turns it off): every worker the evaluator
// forks for a device is enlisted on it while it lives (Enlist), and a TimedHold freezes every enlisted worker of its
// device but its own (sandbox/freezer.h: cgroup freezer or SIGSTOP) from its acquisition to its release, so no other
// process of ours launches work on the device while timed calls run: loads, correctness trials, Triton autotuning,
// warm-ups in __init__ and references all stop where they are. The release thaws them before the lock is free for the
// next hold, and a worker enlisted during a hold is frozen at once (a worker is enlisted from its fork on, before it
// makes its CUDA context: context creation beside timed calls slowed them). What freezing does not stop is work a
// frozen process had already queued on the device (a kernel launched before the freeze runs on); the hold's timed calls
// see that (eval/timed_calls.h: the drain probe; eval/contention.h). Freezing never breaks a frozen worker: its session
// does not count frozen time against its deadlines (sandbox/worker_session.h), a process stops only at a return to
// user space (holding no lock of the kernel's or the driver's), and a hold needs nothing from another worker (its own
// worker, the supervisor and the device are all it uses; the zygote, which forks workers, is never frozen).
//
// LockUse and TimedHold account for one run's use of a device's lock (metadata.timing_lock): how often it was taken,
// how long the run waited for it and how long it held it, so a phase's wall time shows its queueing apart from its
// work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/evaluation.h"
#include "sandbox/freezer.h"

namespace kgym {

class TimingLock {
 public:
  explicit TimingLock(bool quiet = false, bool freeze = true) : quiet_(quiet), freeze_(freeze) {}

  // Enlists `w` on `device` until the returned token is destroyed (before `w` goes): a hold of another run on the
  // device freezes it. Returns null where freezing is off.
  class Enlisted;
  std::unique_ptr<Enlisted> Enlist(const std::string& device, Freezable* w);
  bool freezes() const { return freeze_; }

  // Blocks until `device` is free and holds it until the returned lock is released.
  std::unique_lock<std::mutex> Acquire(const std::string& device);
  // Holds `device` if it is free now; the returned lock does not own it otherwise.
  std::unique_lock<std::mutex> TryAcquire(const std::string& device);

  // Quiet timing: blocks while a TimedHold holds `device`, until that hold's release (a later hold does not keep it
  // waiting); returns the seconds waited. Returns 0 at once when quiet timing is off.
  double AwaitQuiet(const std::string& device);
  bool quiet() const { return quiet_; }

  // The device's idle null-call time (the drain probe's reference, eval/contention.h): the least median of the null
  // calls of an exchange that found the device idle; -1 before the first.
  double IdleNullMs(const std::string& device);
  void NoteIdleNullMs(const std::string& device, double ms);

  // The device a request is timed on: "cuda:N" or "cpu".
  static std::string DeviceOf(const EvalRequest& req);

 private:
  friend class TimedHold;
  struct Device {
    std::mutex timed;  // the lock itself
    // Quiet timing: whether a TimedHold holds it, and how many holds have ended (AwaitQuiet waits for the next end).
    std::mutex mu;
    std::condition_variable ended;
    bool held = false;
    uint64_t holds_ended = 0;
    // Exclusive device time: the enlisted workers, the hold's own, and those the hold froze.
    std::set<Freezable*> workers, frozen;
    Freezable* holder = nullptr;
    double idle_null_ms = -1;
  };
  Device& For(const std::string& device);
  // A hold's start (held: its neighbours frozen; returns how many, and *all_stopped whether every one stopped) and
  // end (they are thawed).
  int MarkHeld(const std::string& device, bool held, Freezable* own = nullptr, bool* all_stopped = nullptr);

  const bool quiet_, freeze_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Device>> devices_;
};

class TimingLock::Enlisted {
 public:
  Enlisted(TimingLock* locks, std::string device, Freezable* w) : locks_(locks), device_(std::move(device)), w_(w) {}
  ~Enlisted();  // a worker frozen by a hold is thawed as it leaves
  Enlisted(const Enlisted&) = delete;
  Enlisted& operator=(const Enlisted&) = delete;

 private:
  TimingLock* locks_;
  std::string device_;
  Freezable* w_;
};

// One run's use of a device's timing lock. `hold` names where the held time went (seconds by part), where the holder
// measured it.
struct LockUse {
  int acquisitions = 0;
  double wait_s = 0, hold_s = 0;
  // wait_s: for the lock itself; hold_s: from the neighbours' stop to the start of their thaw.
  // Exclusive device time: the neighbours its holds froze (summed over holds), the seconds freezing and thawing took
  // (beside wait_s and hold_s: the lock is held meanwhile), and the holds in which some neighbour did not stop in time.
  int neighbours_frozen = 0;
  double freeze_s = 0;
  int freeze_incomplete = 0;
  nlohmann::json hold = nlohmann::json::object();
  // Each hold's (acquired, released) on the wall clock (Unix seconds; released < 0 while held): a benchmark lines the
  // runs' holds up on one clock to tell a lock idle between holds from one idle before the first or after the last.
  std::vector<std::pair<double, double>> holds;
  // {"acquisitions", "wait_s", "hold_s", "hold"[, "first_at" (first acquisition), "last_at" (last release)]
  //  [, "holds": [[at, until], ...] where there were two or more (a candidate's bursts take the lock again), so an
  //  idle gap between them is not read as held]}
  nlohmann::json ToJson() const;
};

// Takes `device`'s lock on construction (waiting as long as it must), freezes the device's other enlisted workers (all
// but `own`, the holder's worker), and thaws them and releases the lock on Release() or destruction, adding one
// acquisition, the wait, the hold and the freezing to *use. Not thread-safe; *use must outlive it.
class TimedHold {
 public:
  TimedHold(TimingLock* locks, const std::string& device, LockUse* use, Freezable* own = nullptr);
  ~TimedHold() { Release(); }
  TimedHold(const TimedHold&) = delete;
  TimedHold& operator=(const TimedHold&) = delete;
  void Release();

 private:
  TimingLock* locks_;
  std::string device_;
  LockUse* use_;
  Freezable* own_;
  std::unique_lock<std::mutex> lock_;
  std::chrono::steady_clock::time_point held_at_;
};

}  // namespace kgym
