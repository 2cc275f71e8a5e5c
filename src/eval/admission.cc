#include "eval/admission.h"

#include <chrono>
#include <cstdio>

#include "eval/host_memory.h"

namespace kgym {

MemoryAdmission::Ticket::~Ticket() {
  if (owner_) owner_->Release(id_);
}

MemoryAdmission::MemoryAdmission(AdmissionOptions options) : opt_(std::move(options)) {
  counters_.budget_bytes = opt_.budget_bytes;
}

MemoryAdmission::~MemoryAdmission() = default;

uint64_t MemoryAdmission::UnknownBytes() const {
  return opt_.unknown_bytes > 0 ? opt_.unknown_bytes : opt_.budget_bytes / 2;
}

uint64_t MemoryAdmission::ReservedLocked(const Entry* extra, uint64_t* resident) const {
  uint64_t total = 0;
  std::map<std::string, uint64_t> shared;  // key -> bytes, counted once however many evaluations share it
  auto add = [&](const Entry& e) {
    if (!e.fp.known) {
      total += UnknownBytes();
      return;
    }
    total += e.fp.private_bytes;
    if (e.fp.shared_key.empty()) {
      total += e.fp.shared_bytes;
    } else {
      uint64_t& s = shared[e.fp.shared_key];
      s = std::max(s, e.fp.shared_bytes);
    }
  };
  for (const auto& [id, e] : in_flight_) add(e);
  if (extra) add(*extra);
  uint64_t held = 0;
  if (opt_.resident) {
    for (const auto& [key, bytes] : opt_.resident()) {
      held += bytes;
      uint64_t& s = shared[key];
      s = std::max(s, bytes);
    }
  }
  if (resident) *resident = held;
  for (const auto& [key, bytes] : shared) total += bytes;
  return total;
}

bool MemoryAdmission::FitsLocked(const Entry& e) const {
  if (opt_.budget_bytes == 0 || in_flight_.empty()) return true;  // never deadlock: the first one always runs
  uint64_t own = e.fp.known ? e.fp.Total() : UnknownBytes();
  if (own > opt_.budget_bytes) return false;  // larger than everything: only alone
  if (!e.fp.known) {
    for (const auto& [id, other] : in_flight_)
      if (!other.fp.known) return false;  // one unknown footprint at a time
  }
  return ReservedLocked(&e, nullptr) <= opt_.budget_bytes;
}

void MemoryAdmission::ScanLocked() {
  bool any = false;
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->admitted) continue;
    if (FitsLocked(*it)) {
      it->admitted = true;
      in_flight_.emplace(it->id, *it);
      for (auto before = waiting_.begin(); before != it; ++before)
        if (!before->admitted) ++before->bypassed;
      any = true;
      continue;
    }
    if (it->bypassed >= opt_.max_bypass) break;  // overtaken enough: nobody behind it goes first any more
  }
  if (any) cv_.notify_all();
}

std::unique_ptr<MemoryAdmission::Ticket> MemoryAdmission::Admit(const Footprint& fp, const std::string& label,
                                                                const std::atomic<bool>* cancel,
                                                                const std::function<void()>& on_wait) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> l(mu_);
  uint64_t id = next_id_++;
  auto me = waiting_.insert(waiting_.end(), Entry{id, fp, label, 0, false});
  ScanLocked();
  bool waited = false;
  while (!me->admitted) {
    if (!waited) {
      waited = true;
      if (on_wait) {
        l.unlock();
        on_wait();
        l.lock();
        continue;  // it may have been admitted meanwhile
      }
    }
    if (cancel && cancel->load()) {
      waiting_.erase(me);
      ++counters_.cancelled_total;
      ScanLocked();  // a blocked head leaving may let others in
      return nullptr;
    }
    // Woken by releases; the timeout re-checks what the resident callback reports (the cache changes on its own).
    if (cv_.wait_for(l, std::chrono::milliseconds(200)) == std::cv_status::timeout) ScanLocked();
  }
  uint64_t own = fp.known ? fp.Total() : UnknownBytes();
  bool oversized = opt_.budget_bytes > 0 && own > opt_.budget_bytes;
  waiting_.erase(me);
  double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++counters_.admitted_total;
  if (waited) {
    ++counters_.waited_total;
    counters_.wait_seconds_total += waited_s;
  }
  if (oversized) ++counters_.oversized_total;
  l.unlock();
  if (oversized && opt_.log_oversized)
    std::fprintf(stderr, "kgym: memory admission: %s needs about %s, more than the memory budget of %s; running it "
                 "alone\n", label.c_str(), FormatGB(own).c_str(), FormatGB(opt_.budget_bytes).c_str());
  auto t = std::unique_ptr<Ticket>(new Ticket());
  t->owner_ = this;
  t->id_ = id;
  t->waited_s_ = waited ? waited_s : 0;
  t->oversized_ = oversized;
  t->reserved_ = own;
  return t;
}

void MemoryAdmission::Release(uint64_t id) {
  std::lock_guard<std::mutex> l(mu_);
  in_flight_.erase(id);
  ScanLocked();
}

AdmissionStats MemoryAdmission::Stats() const {
  std::lock_guard<std::mutex> l(mu_);
  AdmissionStats s = counters_;
  s.reserved_bytes = ReservedLocked(nullptr, &s.resident_bytes);
  s.in_flight = static_cast<int64_t>(in_flight_.size());
  for (const auto& e : waiting_) s.waiting += !e.admitted;
  for (const auto& [id, e] : in_flight_) s.unknown_in_flight += !e.fp.known;
  return s;
}

}  // namespace kgym
