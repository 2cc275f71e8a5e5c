#include "sched/admission.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "sched/host_memory.h"

namespace kgym {

MemoryAdmission::Ticket::~Ticket() {
  if (owner_) owner_->Release(id_);
}

MemoryAdmission::MemoryAdmission(AdmissionOptions options) : opt_(std::move(options)) {
  counters_.budget_bytes = opt_.budget_bytes;
}

MemoryAdmission::~MemoryAdmission() = default;

// Before any footprint is known, half the budget; then a quarter of it, or the largest footprint learned so far where
// that is more (a mix that has shown a 40 GB configuration reserves as much for its next unknown one; one larger than
// the budget makes every unknown one run alone). (mu_ held.)
uint64_t MemoryAdmission::UnknownBytes() const {
  if (opt_.unknown_bytes > 0) return opt_.unknown_bytes;
  if (learned_.empty()) return opt_.budget_bytes / 2;
  uint64_t largest = 0;
  for (const auto& [key, f] : learned_) largest = std::max(largest, f.Total());
  return std::max(opt_.budget_bytes / 4, std::min(largest, opt_.budget_bytes));
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
    int unknown = 0;
    for (const auto& [id, other] : in_flight_) unknown += !other.fp.known;
    // Few unknown footprints at a time, and one alone until some footprint is known.
    const int most = learned_.empty() ? 1 : std::max(1, opt_.max_unknown_in_flight);
    if (unknown >= most) return false;
  }
  return ReservedLocked(&e, nullptr) <= opt_.budget_bytes;
}

void MemoryAdmission::ScanLocked() {
  bool any = false;
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->admitted) continue;
    if (!it->config_key.empty() && !it->fp.known) {  // learned while it waited?
      auto l = learned_.find(it->config_key);
      if (l != learned_.end()) it->fp = l->second;
    }
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
  return AdmitEntry(Entry{0, "", fp, label, 0, false}, cancel, on_wait);
}

std::unique_ptr<MemoryAdmission::Ticket> MemoryAdmission::AdmitConfig(const std::string& config_key,
                                                                      const std::string& label,
                                                                      const std::atomic<bool>* cancel,
                                                                      const std::function<void()>& on_wait) {
  return AdmitEntry(Entry{0, config_key, Footprint{}, label, 0, false}, cancel, on_wait);
}

std::unique_ptr<MemoryAdmission::Ticket> MemoryAdmission::AdmitReference(const std::string& config_key,
                                                                         const std::atomic<bool>* cancel) {
  return AdmitEntry(Entry{0, config_key, Footprint{}, "a reference prepared ahead", 0, false, false}, cancel, {});
}

void MemoryAdmission::Learn(const std::string& config_key, const Footprint& m) {
  if (!m.known) return;
  std::lock_guard<std::mutex> l(mu_);
  if (estimated_.erase(config_key)) {  // the first measurement replaces the estimate
    learned_[config_key] = m;
    return;
  }
  Footprint& f = learned_[config_key];
  f.known = true;
  f.shared_key = m.shared_key;  // peaks vary from run to run: keep the largest seen
  f.shared_bytes = std::max(f.shared_bytes, m.shared_bytes);
  f.private_bytes = std::max(f.private_bytes, m.private_bytes);
}

void MemoryAdmission::Estimate(const std::string& config_key, const Footprint& e) {
  if (!e.known || config_key.empty()) return;
  std::lock_guard<std::mutex> l(mu_);
  if (learned_.count(config_key) && !estimated_.count(config_key)) return;  // measured already
  learned_[config_key] = e;
  estimated_.insert(config_key);
  for (auto& [id, f] : in_flight_)
    if (f.config_key == config_key && !f.fp.known) f.fp = e;
  ScanLocked();
}

Footprint MemoryAdmission::Known(const std::string& config_key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = learned_.find(config_key);
  return it == learned_.end() ? Footprint{} : it->second;
}

std::unique_ptr<MemoryAdmission::Ticket> MemoryAdmission::AdmitEntry(Entry entry, const std::atomic<bool>* cancel,
                                                                     const std::function<void()>& on_wait) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> l(mu_);
  entry.id = next_id_++;
  uint64_t id = entry.id;
  auto me = waiting_.insert(waiting_.end(), std::move(entry));
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
  Footprint fp = me->fp;
  std::string label = me->label;
  uint64_t own = fp.known ? fp.Total() : UnknownBytes();
  bool oversized = opt_.budget_bytes > 0 && own > opt_.budget_bytes;
  const bool evaluation = me->evaluation;
  waiting_.erase(me);
  double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!evaluation) {
    ++counters_.references_total;
  } else {
    ++counters_.admitted_total;
    if (waited) {
      ++counters_.waited_total;
      counters_.wait_seconds_total += waited_s;
    }
    if (oversized) ++counters_.oversized_total;
  }
  l.unlock();
  if (oversized && evaluation && opt_.log_oversized)
    std::fprintf(stderr,
                 "kgym: memory admission: %s needs about %s, more than the memory budget of %s; running it "
                 "alone\n",
                 label.c_str(), FormatGB(own).c_str(), FormatGB(opt_.budget_bytes).c_str());
  auto t = std::unique_ptr<Ticket>(new Ticket());
  t->owner_ = this;
  t->id_ = id;
  t->waited_s_ = waited ? waited_s : 0;
  t->oversized_ = oversized;
  t->known_ = fp.known;
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
