#include "eval/timing_lock.h"

namespace kgym {

std::mutex& TimingLock::For(const std::string& device) {
  std::lock_guard<std::mutex> l(mu_);
  auto& m = devices_[device];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

std::unique_lock<std::mutex> TimingLock::Acquire(const std::string& device) {
  return std::unique_lock<std::mutex>(For(device));
}

std::unique_lock<std::mutex> TimingLock::TryAcquire(const std::string& device) {
  return std::unique_lock<std::mutex>(For(device), std::try_to_lock);
}

std::string TimingLock::DeviceOf(const EvalRequest& req) {
  return req.device == "cuda" ? "cuda:" + std::to_string(req.device_index) : "cpu";
}

}  // namespace kgym
