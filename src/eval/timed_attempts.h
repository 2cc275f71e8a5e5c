// TimedAttempts: one worker's timed phase on its device (the reference's and every candidate's), attempt by attempt.
// Each attempt takes the device's TimingLock (which freezes the device's other workers, eval/timing_lock.h), runs the
// timed calls (eval/timed_calls.h; on a GPU after the drain probe), notes the device's idle null-call time and, where
// the worker has the kernel recorder, fetches its stream and finds the calls that shared the device
// (eval/contention.h). An attempt that did not drain or shared more than kSharedShare of its calls is timed again,
// with call ids of its own (kAttemptIds apart) and no fresh sets (the first attempt's were used once, as they must
// be), up to kTimingAttempts. The last attempt is what is reported; its shared calls are left out of every series.
//
// Not thread-safe: one per timed phase. The worker's session, the lock and the watch must outlive it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/contention.h"
#include "eval/gpu_timing.h"
#include "eval/timed_calls.h"
#include "eval/timing_lock.h"

namespace kgym {

constexpr int kAttemptIds = 100000;

class TimedAttempts {
 public:
  struct Hooks {
    // Still under the lock after the first attempt's calls (a candidate's grad-enabled detection call).
    std::function<Status()> under_lock;
    // After each attempt's lock is released, before its stream is fetched (a candidate's kept outputs).
    std::function<Status(TimedCallsResult*)> after_lock;
    // Whether the stream is worth fetching after this attempt (a wrong result is judged without it).
    std::function<bool()> timeline_wanted;
  };

  TimedAttempts(WorkerSession* w, TimingLock* locks, std::string device, Clock::time_point deadline,
                ProcessWatch* watch, LockUse* use)
      : w_(w), locks_(locks), device_(std::move(device)), deadline_(deadline), watch_(watch), use_(use) {}

  // `p`: the first attempt's parameters (first_call 0). `recorded`: the worker has the kernel recorder. A failure of
  // the stream's fetch is not Run's: it is in timeline_status (and the timeline's problem), and ends the attempts.
  Status Run(TimedCallsParams p, bool recorded, const Hooks& hooks = {});

  TimedCallsResult calls;                    // the last attempt's (fresh_ms: the first attempt's)
  std::unique_ptr<WorkerTimeline> timeline;  // the stream after the last attempt (null: none fetched)
  Status timeline_status;                    // its fetch
  SharedCalls shared;                        // the last attempt's calls that shared the device
  ExchangeTimes times;                       // every attempt's, summed
  double timeline_fetch_s = 0;               // the streams' fetches (after the lock), summed
  int attempts = 0;
  TimedCallsParams last;  // the last attempt's parameters (its first_call)

 private:
  void FindShared(const TimedCallsParams& p);

  WorkerSession* w_;
  TimingLock* locks_;
  const std::string device_;
  const Clock::time_point deadline_;
  ProcessWatch* watch_;
  LockUse* use_;
  std::vector<double> set_least_;  // each input set's least busy time over the attempts
};

}  // namespace kgym
