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

namespace {
double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
}  // namespace

nlohmann::json LockUse::ToJson() const {
  nlohmann::json j = {{"acquisitions", acquisitions}, {"wait_s", wait_s}, {"hold_s", hold_s}, {"hold", hold}};
  if (first_at >= 0) j["first_at"] = first_at;
  if (last_at >= 0) j["last_at"] = last_at;
  return j;
}

TimedHold::TimedHold(TimingLock* locks, const std::string& device, LockUse* use) : use_(use) {
  const auto t0 = std::chrono::steady_clock::now();
  lock_ = locks->Acquire(device);
  held_at_ = std::chrono::steady_clock::now();
  use_->acquisitions++;
  use_->wait_s += std::chrono::duration<double>(held_at_ - t0).count();
  if (use_->first_at < 0) use_->first_at = UnixNow();
}

void TimedHold::Release() {
  if (!lock_.owns_lock()) return;
  use_->hold_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - held_at_).count();
  use_->last_at = UnixNow();
  lock_.unlock();
}

}  // namespace kgym
