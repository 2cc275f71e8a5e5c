// TimingLock: one lock per device. Timing phases (the reference's and every candidate's timed calls, the decoy
// rule's grad-enabled call) on one device run one at a time, so no two timed calls ever share a GPU; loading,
// compiling and correctness of several evaluations still overlap.
//
// Thread-safe. Devices are named as in metadata ("cpu", "cuda:0", ...) and made on first use; they live as long as
// the TimingLock, which must outlive every lock it handed out.
//
// LockUse and TimedHold account for one run's use of a device's lock (metadata.timing_lock): how often it was taken,
// how long the run waited for it and how long it held it, so a phase's wall time shows its queueing apart from its
// work.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/evaluation.h"

namespace kgym {

class TimingLock {
 public:
  // Blocks until `device` is free and holds it until the returned lock is released.
  std::unique_lock<std::mutex> Acquire(const std::string& device);
  // Holds `device` if it is free now; the returned lock does not own it otherwise.
  std::unique_lock<std::mutex> TryAcquire(const std::string& device);

  // The device a request is timed on: "cuda:N" or "cpu".
  static std::string DeviceOf(const EvalRequest& req);

 private:
  std::mutex& For(const std::string& device);

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> devices_;
};

// One run's use of a device's timing lock. `hold` names where the held time went (seconds by part), where the holder
// measured it.
struct LockUse {
  int acquisitions = 0;
  double wait_s = 0, hold_s = 0;
  nlohmann::json hold = nlohmann::json::object();
  // Wall clock (Unix seconds) of the first acquisition and the last release (< 0: none yet): a benchmark lines the
  // runs' holds up on one clock to tell a lock idle between holds from one idle before the first or after the last.
  double first_at = -1, last_at = -1;
  // {"acquisitions", "wait_s", "hold_s", "hold"[, "first_at", "last_at"]}
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
  LockUse* use_;
  std::unique_lock<std::mutex> lock_;
  std::chrono::steady_clock::time_point held_at_;
};

}  // namespace kgym
