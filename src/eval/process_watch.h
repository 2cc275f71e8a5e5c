// ProcessWatch: what the supervisor sees of a worker process from outside (/proc) around each call of one phase:
// the process's thread count before and after the call, its CPU time inside the call (armed -> done) and between one
// call and the next one's arming (the harness's refill), and the CPU time of the threads that were not there when
// the worker said hello (the candidate's own threads, and those its libraries started lazily). Nothing the candidate
// does to its own interpreter changes these numbers; the hack rules (eval/hack_rules.h) judge them.
//
// Not thread-safe: one watch belongs to one phase of one evaluation.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kgym {

// The watch's record, the evidence the rules read.
struct WatchEvidence {
  struct Call {
    int threads_before = -1, threads_after = -1;
    // CPU of the threads born after hello, from this call's start to the next counted call's start (or this call's
    // end, for the last one).
    double new_thread_cpu_ms = 0;
  };
  std::vector<Call> calls;  // the calls whose threads were counted, in order
  std::vector<double> cpu_inside_ms, cpu_between_ms;
  bool new_threads_known = false;  // the threads at hello were known, so new_thread_cpu_ms means something
  int unsettled_readings = 0;      // settled readings (CpuClock::kSettled) taken while a thread still ran
  // The first calls of the evaluation, where a library may start its threads lazily (eval/hack_rules.h); 0 in a phase
  // whose calls come after others.
  int settle_calls = 0;

  int Growth() const;  // calls that ended with more threads than they began with
};

// How the watch reads the process's CPU clock: not at all; at once; or, for the two readings around a measured
// "between calls", settled (sandbox/process_stats.h: once no thread of the worker runs). A CPU evaluation settles:
// its worker's pool threads are on a CPU when "done" arrives, and read at once their last tick of the call (4 ms at
// HZ=250) lands between calls; checking every thread's state costs ~4 us a thread, which a GPU worker's single
// calling thread, blocked right after "done", does not need.
enum class CpuClock { kOff, kAtOnce, kSettled };
inline CpuClock CpuClockFor(const std::string& device) {
  return device == "cpu" ? CpuClock::kSettled : CpuClock::kAtOnce;
}

class ProcessWatch {
 public:
  // `hello_threads`: the ids of the process's threads when the worker said hello (empty: unknown). `count_threads`
  // and `cpu` say what is watched (the reference's threads and the correctness trials' CPU are not judged).
  ProcessWatch(pid_t pid, std::set<pid_t> hello_threads, bool count_threads, CpuClock cpu, int settle_calls = 0);

  // Around one call. A call whose threads are not counted (an early warmup) still counts for the CPU split;
  // `between_follows` says the time until the next Before() is the harness's refill alone (no fetch of outputs).
  void Before(bool count_threads = true);
  void After(bool count_threads = true, bool between_follows = false);
  // The next call is not watched at all: the time until it returns is not "between calls".
  void Skip() { pending_between_ = false; }

  const WatchEvidence& evidence() const { return ev_; }

 private:
  struct Reading;
  Reading Read(bool counted, bool settle) const;
  double NewThreadCpuMs(const Reading& r);  // since the last reading

  pid_t pid_;
  std::set<pid_t> hello_;
  bool count_threads_;
  CpuClock cpu_;
  int before_ = -1;
  int64_t cpu_armed_ = -1, cpu_done_ = -1;
  bool pending_between_ = false;
  std::map<pid_t, int64_t> last_new_;  // CPU of each new thread at the last reading
  WatchEvidence ev_;
};

}  // namespace kgym
