// TimingLock: one lock per device. Timing phases (the reference's and every candidate's timed calls, the decoy
// rule's grad-enabled call) on one device run one at a time, so no two timed calls ever share a GPU; loading,
// compiling and correctness of several evaluations still overlap.
//
// Thread-safe. Devices are named as in metadata ("cpu", "cuda:0", ...) and made on first use; they live as long as
// the TimingLock, which must outlive every lock it handed out.
#pragma once

#include <map>
#include <memory>
#include <mutex>
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

}  // namespace kgym
