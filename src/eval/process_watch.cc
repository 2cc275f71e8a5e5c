#include "eval/process_watch.h"

#include "sandbox/process_stats.h"

namespace kgym {

int WatchEvidence::Growth() const {
  int n = 0;
  for (const Call& c : calls) n += c.threads_before >= 0 && c.threads_after > c.threads_before;
  return n;
}

ProcessWatch::ProcessWatch(pid_t pid, std::set<pid_t> hello_threads, bool count_threads, CpuClock cpu, int settle_calls)
    : pid_(pid), hello_(std::move(hello_threads)), count_threads_(count_threads), cpu_(cpu) {
  ev_.new_threads_known = count_threads_ && pid_ > 0 && !hello_.empty();
  ev_.settle_calls = settle_calls;
}

// One reading per side of a call, made while the device's timing lock is held, so it costs a few system calls
// whatever the thread count: the process's CPU clock (every thread's time, ended threads' included), the list of its
// threads, and the CPU time of those born after hello only (a worker has dozens of threads from its libraries).
// A settled reading (CPU evaluations, around a measured "between") also reads every thread's state, ~4 us a thread,
// and waits at most kSettleUs: a thread that runs on, as deferred work does, has up to that much of its work counted
// in the call instead of after it.
constexpr int kSettleUs = 2000;

struct ProcessWatch::Reading {
  int count = -1;
  int64_t total = -1;
  bool unsettled = false;         // a settled reading that gave up waiting
  std::map<pid_t, int64_t> born;  // the threads born after hello: their CPU time
};

ProcessWatch::Reading ProcessWatch::Read(bool counted, bool settle) const {
  Reading r;
  if (cpu_ != CpuClock::kOff)
    r.total =
        cpu_ == CpuClock::kSettled && settle ? SettledProcessCpuNs(pid_, kSettleUs, &r.unsettled) : ProcessCpuNs(pid_);
  if (!counted) return r;
  const std::set<pid_t> ids = ThreadIds(pid_);
  if (!ids.empty()) r.count = static_cast<int>(ids.size());
  if (ev_.new_threads_known)
    for (pid_t tid : ids)
      if (!hello_.count(tid))
        if (int64_t ns = ThreadRunNs(pid_, tid); ns >= 0) r.born[tid] = ns;
  return r;
}

double ProcessWatch::NewThreadCpuMs(const Reading& r) {
  if (!ev_.new_threads_known) return 0;
  int64_t ns = 0;
  for (const auto& [tid, t] : r.born) {
    auto it = last_new_.find(tid);
    ns += t - (it == last_new_.end() ? 0 : it->second);  // a thread born since the last reading: all of it
  }
  last_new_ = r.born;
  return ns > 0 ? ns / 1e6 : 0;
}

void ProcessWatch::Before(bool count_threads) {
  const bool counted = count_threads_ && count_threads;
  const Reading r = Read(counted, pending_between_);
  ev_.unsettled_readings += r.unsettled;
  if (counted) {
    double since = NewThreadCpuMs(r);
    if (!ev_.calls.empty()) ev_.calls.back().new_thread_cpu_ms += since;  // the previous call's tail
  }
  before_ = counted ? r.count : -1;
  cpu_armed_ = r.total;
  if (pending_between_ && cpu_done_ >= 0 && cpu_armed_ >= cpu_done_)
    ev_.cpu_between_ms.push_back((cpu_armed_ - cpu_done_) / 1e6);
  pending_between_ = false;
}

void ProcessWatch::After(bool count_threads, bool between_follows) {
  const bool counted = count_threads_ && count_threads;
  const Reading r = Read(counted, between_follows);
  ev_.unsettled_readings += r.unsettled;
  const int after = counted ? r.count : -1;
  cpu_done_ = r.total;
  if (cpu_armed_ >= 0 && cpu_done_ >= cpu_armed_) ev_.cpu_inside_ms.push_back((cpu_done_ - cpu_armed_) / 1e6);
  pending_between_ = between_follows && cpu_done_ >= 0;
  if (before_ < 0 || after < 0) return;
  ev_.calls.push_back({before_, after, NewThreadCpuMs(r)});
}

}  // namespace kgym
