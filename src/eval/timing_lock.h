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
#include <string>
#include <utility>
#include <vector>

#include "core/evaluation.h"

namespace kgym {

class TimingLock {
 public:
  explicit TimingLock(bool quiet = false) : quiet_(quiet) {}

  // Blocks until `device` is free and holds it until the returned lock is released.
  std::unique_lock<std::mutex> Acquire(const std::string& device);
  // Holds `device` if it is free now; the returned lock does not own it otherwise.
  std::unique_lock<std::mutex> TryAcquire(const std::string& device);

  // Quiet timing: blocks while a TimedHold holds `device`, until that hold's release (a later hold does not keep it
  // waiting); returns the seconds waited. Returns 0 at once when quiet timing is off.
  double AwaitQuiet(const std::string& device);
  bool quiet() const { return quiet_; }

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
  };
  Device& For(const std::string& device);
  void MarkHeld(const std::string& device, bool held);

  const bool quiet_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Device>> devices_;
};

// One run's use of a device's timing lock. `hold` names where the held time went (seconds by part), where the holder
// measured it.
struct LockUse {
  int acquisitions = 0;
  double wait_s = 0, hold_s = 0;
  nlohmann::json hold = nlohmann::json::object();
  // Each hold's (acquired, released) on the wall clock (Unix seconds; released < 0 while held): a benchmark lines the
  // runs' holds up on one clock to tell a lock idle between holds from one idle before the first or after the last.
  std::vector<std::pair<double, double>> holds;
  // {"acquisitions", "wait_s", "hold_s", "hold"[, "first_at" (first acquisition), "last_at" (last release)]
  //  [, "holds": [[at, until], ...] where there were two or more (a candidate's bursts take the lock again), so an
  //  idle gap between them is not read as held]}
  nlohmann::json ToJson() const;
};

// Takes `device`'s lock on construction (waiting as long as it must) and releases it on Release() or destruction,
// adding one acquisition, the wait and the hold to *use. Not thread-safe; *use must outlive it.
class TimedHold {
 public:
  TimedHold(TimingLock* locks, const std::string& device, LockUse* use);
  ~TimedHold() { Release(); }
  TimedHold(const TimedHold&) = delete;
  TimedHold& operator=(const TimedHold&) = delete;
  void Release();

 private:
  TimingLock* locks_;
  std::string device_;
  LockUse* use_;
  std::unique_lock<std::mutex> lock_;
  std::chrono::steady_clock::time_point held_at_;
};

}  // namespace kgym
