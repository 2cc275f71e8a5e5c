#include "eval/process_watch.h"

#include "sandbox/process_stats.h"

namespace kgym {

int WatchEvidence::Growth() const {
  int n = 0;
  for (const Call& c : calls) n += c.threads_before >= 0 && c.threads_after > c.threads_before;
  return n;
}

ProcessWatch::ProcessWatch(pid_t pid, std::set<pid_t> hello_threads, bool count_threads, bool cpu, int settle_calls)
    : pid_(pid), hello_(std::move(hello_threads)), count_threads_(count_threads), cpu_(cpu) {
  ev_.new_threads_known = count_threads_ && pid_ > 0 && !hello_.empty();
  ev_.settle_calls = settle_calls;
}

// One reading of /proc per side of a call: every thread's CPU time once (a readdir and a read per thread; a worker has
// dozens of threads and the watch runs while the device's timing lock is held), the count and the total derived.
struct ProcessWatch::Reading {
  std::map<pid_t, int64_t> threads;
  int count() const { return threads.empty() ? -1 : static_cast<int>(threads.size()); }
  int64_t total() const {
    if (threads.empty()) return -1;
    int64_t sum = 0;
    for (const auto& [tid, ns] : threads) sum += ns;
    return sum;
  }
};

double ProcessWatch::NewThreadCpuMs(const Reading& r) {
  if (!ev_.new_threads_known) return 0;
  int64_t ns = 0;
  std::map<pid_t, int64_t> now;
  for (const auto& [tid, t] : r.threads) {
    if (hello_.count(tid)) continue;
    now[tid] = t;
    auto it = last_new_.find(tid);
    ns += t - (it == last_new_.end() ? 0 : it->second);  // a thread born since the last reading: all of it
  }
  last_new_ = std::move(now);
  return ns > 0 ? ns / 1e6 : 0;
}

void ProcessWatch::Before(bool count_threads) {
  const bool counted = count_threads_ && count_threads;
  Reading r;
  if (counted || cpu_) r.threads = ThreadCpuNs(pid_);
  if (counted) {
    double since = NewThreadCpuMs(r);
    if (!ev_.calls.empty()) ev_.calls.back().new_thread_cpu_ms += since;  // the previous call's tail
  }
  before_ = counted ? r.count() : -1;
  cpu_armed_ = cpu_ ? r.total() : -1;
  if (pending_between_ && cpu_done_ >= 0 && cpu_armed_ >= cpu_done_)
    ev_.cpu_between_ms.push_back((cpu_armed_ - cpu_done_) / 1e6);
  pending_between_ = false;
}

void ProcessWatch::After(bool count_threads, bool between_follows) {
  const bool counted = count_threads_ && count_threads;
  Reading r;
  if (counted || cpu_) r.threads = ThreadCpuNs(pid_);
  int after = counted ? r.count() : -1;
  cpu_done_ = cpu_ ? r.total() : -1;
  if (cpu_armed_ >= 0 && cpu_done_ >= cpu_armed_) ev_.cpu_inside_ms.push_back((cpu_done_ - cpu_armed_) / 1e6);
  pending_between_ = between_follows && cpu_done_ >= 0;
  if (before_ < 0 || after < 0) return;
  ev_.calls.push_back({before_, after, NewThreadCpuMs(r)});
}

}  // namespace kgym
