// Contention: the second line of exclusive device time. The first (eval/timing_lock.h) freezes every other worker of
// ours on the device for the hold; what it cannot stop is work already queued on the GPU by a frozen process (a kernel
// launched before the freeze runs on: a GPU time-slices between processes' contexts, ~ms at a time, so a timed call
// that meets such a kernel takes that much longer), or a process that is not ours (a learner sharing the GPU).
//
// What a hold does about it:
// 1. The drain probe (eval/timed_calls.h, GPU): before the first timed call, the holder's worker runs null calls (one
//    tiny kernel each, bracketed by the supervisor) until two in a row come back within the device's idle null-call
//    time (IdleNullBound), waiting at most kDrainWaitS: work left by frozen processes drains meanwhile (a kernel runs
//    to its end; one longer than the wait does not).
// 2. Shared calls (FindSharedCalls): from the kernel timeline, each timed call's device-busy time (the union of its
//    operations, which a slice given to another context stretches, and a slow host does not). A call is shared when
//    its busy time exceeds its input set's least busy time (over every attempt) by more than kSharedSlack and
//    kSharedSlackMs (a set met once: the attempt's 10th percentile by kSharedSlackOne): contention only ever adds time,
//    and an honest kernel's busy time on one input set is steady (the L2 is flushed before every call).
// 3. Shared calls are never reported: the reported series leaves them out. An attempt whose probe did not drain or
//    with more than kSharedShare of its calls shared is timed again (the hold taken anew, after another probe), up to
//    kTimingAttempts; if every attempt is shared, the last one's calls that were not are reported and the result says
//    so (metadata.timing_contended).
// No rule reads contention as cheating: the caching rules compare fresh calls with the rotation's unshared calls, and
// the deferred-work rule's reading between calls does not include the wait for the device (python/kgym_harness:
// Runner.wait_device blocks instead of spinning).
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace kgym {

constexpr double kDrainWaitS = 2.0;
constexpr int kTimingAttempts = 2;
constexpr double kSharedSlack = 0.10, kSharedSlackMs = 0.02, kSharedSlackOne = 0.25, kSharedShare = 0.10;

// The bound a drain probe's null call must stay within: the device's idle null-call time (its least median seen,
// `idle_null_ms`; <= 0: unknown, 0.3 ms assumed) doubled, at least 0.25 ms above it.
double IdleNullBound(double idle_null_ms);

struct SharedCalls {
  std::vector<bool> shared;  // per timed call
  int count = 0;
  bool clean = true;  // count <= kSharedShare of the calls
};

// `busy_ms[i]`: call i's device-busy time; `sets[i]`: its input set; `set_least_ms`: each set's least busy time seen in
// earlier attempts (indexed by set; missing or < 0: none), updated with this attempt's.
SharedCalls FindSharedCalls(const std::vector<double>& busy_ms, const std::vector<int>& sets,
                            std::vector<double>* set_least_ms);

// `values` without the shared calls' (same order).
std::vector<double> Unshared(const std::vector<double>& values, const SharedCalls& s);

}  // namespace kgym
