#include "eval/timing_lock.h"

#include <algorithm>

namespace kgym {

TimingLock::Device& TimingLock::For(const std::string& device) {
  std::lock_guard<std::mutex> l(mu_);
  auto& d = devices_[device];
  if (!d) d = std::make_unique<Device>();
  return *d;
}

std::unique_lock<std::mutex> TimingLock::Acquire(const std::string& device) {
  return std::unique_lock<std::mutex>(For(device).timed);
}

std::unique_lock<std::mutex> TimingLock::TryAcquire(const std::string& device) {
  return std::unique_lock<std::mutex>(For(device).timed, std::try_to_lock);
}

double TimingLock::AwaitQuiet(const std::string& device) {
  if (!quiet_) return 0;
  Device& d = For(device);
  std::unique_lock<std::mutex> l(d.mu);
  if (!d.held) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t ended = d.holds_ended;
  d.ended.wait(l, [&] { return d.holds_ended != ended; });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void TimingLock::MarkHeld(const std::string& device, bool held) {
  Device& d = For(device);
  {
    std::lock_guard<std::mutex> l(d.mu);
    d.held = held;
    if (!held) d.holds_ended++;
  }
  if (!held) d.ended.notify_all();
}

std::string TimingLock::DeviceOf(const EvalRequest& req) {
  return req.device == "cuda" ? "cuda:" + std::to_string(req.device_index) : "cpu";
}

namespace {
double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
}  // namespace

nlohmann::json LockUse::ToJson() const {
  nlohmann::json j = {{"acquisitions", acquisitions}, {"wait_s", wait_s}, {"hold_s", hold_s}, {"hold", hold}};
  if (!holds.empty()) j["first_at"] = holds.front().first;
  double last_at = -1;
  for (const auto& h : holds) last_at = std::max(last_at, h.second);
  if (last_at >= 0) j["last_at"] = last_at;
  if (holds.size() > 1) {
    j["holds"] = nlohmann::json::array();
    for (const auto& [at, until] : holds) j["holds"].push_back({at, until});
  }
  return j;
}

TimedHold::TimedHold(TimingLock* locks, const std::string& device, LockUse* use)
    : locks_(locks), device_(device), use_(use) {
  const auto t0 = std::chrono::steady_clock::now();
  lock_ = locks->Acquire(device);
  locks_->MarkHeld(device_, true);
  held_at_ = std::chrono::steady_clock::now();
  use_->acquisitions++;
  use_->wait_s += std::chrono::duration<double>(held_at_ - t0).count();
  use_->holds.emplace_back(UnixNow(), -1);
}

void TimedHold::Release() {
  if (!lock_.owns_lock()) return;
  use_->hold_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - held_at_).count();
  use_->holds.back().second = UnixNow();
  locks_->MarkHeld(device_, false);
  lock_.unlock();
}

}  // namespace kgym
