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

int TimingLock::MarkHeld(const std::string& device, bool held, Freezable* own, bool* all_stopped) {
  Device& d = For(device);
  int frozen = 0;
  {
    std::lock_guard<std::mutex> l(d.mu);
    d.held = held;
    if (held) {
      d.holder = own;
      // Every neighbour is asked to stop first, then all are awaited together (sandbox/freezer.h).
      for (Freezable* w : d.workers)
        if (w != own) {
          w->StartFreeze();
          d.frozen.insert(w);
        }
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kFreezeWaitUs);
      bool all = true;
      for (Freezable* w : d.frozen) all &= w->AwaitFrozen(until);
      frozen = static_cast<int>(d.frozen.size());
      if (all_stopped) *all_stopped = all;
    } else {
      for (Freezable* w : d.frozen) w->Thaw();
      d.frozen.clear();
      d.holder = nullptr;
      d.holds_ended++;
    }
  }
  if (!held) d.ended.notify_all();
  return frozen;
}

std::unique_ptr<TimingLock::Enlisted> TimingLock::Enlist(const std::string& device, Freezable* w) {
  if (!freeze_ || !w) return nullptr;
  Device& d = For(device);
  std::lock_guard<std::mutex> l(d.mu);
  d.workers.insert(w);
  if (d.held && w != d.holder) {  // made during a hold: it waits for the hold's end like the others
    w->Freeze();
    d.frozen.insert(w);
  }
  return std::make_unique<Enlisted>(this, device, w);
}

TimingLock::Enlisted::~Enlisted() {
  Device& d = locks_->For(device_);
  std::lock_guard<std::mutex> l(d.mu);
  d.workers.erase(w_);
  if (d.frozen.erase(w_)) w_->Thaw();
  if (d.holder == w_) d.holder = nullptr;
}

double TimingLock::IdleNullMs(const std::string& device) {
  Device& d = For(device);
  std::lock_guard<std::mutex> l(d.mu);
  return d.idle_null_ms;
}

void TimingLock::NoteIdleNullMs(const std::string& device, double ms) {
  if (!(ms > 0)) return;
  Device& d = For(device);
  std::lock_guard<std::mutex> l(d.mu);
  if (d.idle_null_ms < 0 || ms < d.idle_null_ms) d.idle_null_ms = ms;
}

std::string TimingLock::DeviceOf(const EvalRequest& req) {
  return req.device == "cuda" ? "cuda:" + std::to_string(req.device_index) : "cpu";
}

namespace {
double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
}  // namespace

nlohmann::json LockUse::ToJson() const {
  nlohmann::json j = {
      {"acquisitions", acquisitions},           {"wait_s", wait_s},    {"hold_s", hold_s}, {"hold", hold},
      {"neighbours_frozen", neighbours_frozen}, {"freeze_s", freeze_s}};
  if (freeze_incomplete > 0) j["freeze_incomplete"] = freeze_incomplete;
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

TimedHold::TimedHold(TimingLock* locks, const std::string& device, LockUse* use, Freezable* own)
    : locks_(locks), device_(device), use_(use), own_(own) {
  const auto t0 = std::chrono::steady_clock::now();
  lock_ = locks->Acquire(device);
  const auto f0 = std::chrono::steady_clock::now();
  bool all = true;
  use_->neighbours_frozen += locks_->MarkHeld(device_, true, own_, &all);
  use_->freeze_incomplete += !all;
  held_at_ = std::chrono::steady_clock::now();
  use_->freeze_s += std::chrono::duration<double>(held_at_ - f0).count();
  use_->acquisitions++;
  use_->wait_s += std::chrono::duration<double>(f0 - t0).count();  // the lock itself; freezing is freeze_s
  use_->holds.emplace_back(UnixNow(), -1);
}

void TimedHold::Release() {
  if (!lock_.owns_lock()) return;
  use_->hold_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - held_at_).count();
  use_->holds.back().second = UnixNow();
  const auto f0 = std::chrono::steady_clock::now();
  locks_->MarkHeld(device_, false);  // the neighbours go on before the next hold can start
  use_->freeze_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - f0).count();
  lock_.unlock();
}

}  // namespace kgym
