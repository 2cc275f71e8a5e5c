// TimedCalls: the timing exchange with one worker (reference or candidate), after its input sets are in place. Every
// sample is the supervisor's own bracket of one call: from its "go" to the worker's "done" (sandbox/protocol.h), so a
// late read can only lengthen a sample, never shorten it.
//
// StartTimedCalls first (the worker prepares its live inputs and flush buffer: no timed work, so callers run it before
// they take the device's TimingLock), then TimedCalls. In order: `warmup` calls (at least one, and one per rotation
// set where fewer than 4 timed calls per set would leave a content cache's first-visit misses near the median), then
// `calls` timed calls rotating through the rotation sets, with calls on the fresh sets (each used once, at random
// places among them; their times kept apart, so a cache keyed on the inputs' content shows as fresh calls slower than
// the rest) and, on a GPU, the harness's null calls (spread over the timed calls: the process's own overhead per call,
// measured in the same conditions); then, from 10 timed calls on, two pipelined bursts of k model calls and two of k
// flushes alone (BurstPerCallMs, eval/gpu_timing.h).
// With a stop rule (`adaptive`, eval/adaptive_trials.h), the timed calls stop early, after the floor, once the median
// of their brackets is known within the rule's target; `calls` is then the ceiling. Everything the phase checks stays
// within the floor's first calls: the fresh calls, the null calls, and the random subset of fetched calls (the plan
// is drawn over the floor as it is over all calls without a rule); past the floor, each call is fetched with
// probability kLateFetchShare, and the call timing stops at is always fetched. A candidate that times its own calls
// can predict where the rule stops, but not which calls past the floor are fetched: one that returns garbage from its
// cheap calls there is caught with probability 1 - (1 - kLateFetchShare)^calls (more than half of the calls must be
// cheap to move the median; past a floor of 20 that is >= 21 calls: 99 %), and its fresh calls, all within the floor,
// are slower than the median it reports (FreshSetCachingRule).
// On a GPU (`drain_wait_s` > 0), the drain probe comes first: null calls until the device is idle or the wait is over
// (eval/contention.h); it says whether the device drained.
// Call ids: timed calls first_call.., fresh calls first_call + calls.. (an attempt timed again takes ids of its own, so
// the kernel recorder's tags of two attempts never mix).
// Where `verify` is set, a random subset of timed calls, the last one and every fresh call are fetched right after
// their call (the worker cannot tell in advance which). With `keep_mb` > 0 the worker may instead keep a copy of the
// outputs on their device (within keep_mb, leaving keep_free of the device's memory free) and answer "kept": the call
// is listed in TimedCallsResult::kept and its outputs travel later, in FetchKeptOutputs, outside the timing lock. An
// error frame in reply is handed to `verify` at once and ends the exchange; outputs are handed to `verify` on a thread
// of its own (BackgroundCheck: one at a time), so the next calls go on while they are compared; the exchange stops at
// the first call after a comparison is known to have failed (before the bursts at the latest), and TimedCalls returns
// only once every comparison has finished. With `bursts` off the bursts are left out: TimedBursts runs them later in
// the same session (a candidate's run only where they can change its reported time, eval/gpu_timing.h).
//
// FetchKeptOutputs, after TimedCalls and after the lock is released (before the kernel recorder's timeline is
// collected, so work the candidate starts meanwhile is still on its record): the kept calls' outputs, fetched in
// order and compared the same way; `stopped` is set at the first wrong one, and the rest are not fetched. Where
// `lend` gives a buffer, the fetch lends it for the outputs (eval/lent_buffers.h) and the frame handed to `verify`
// carries it as the region after the reply's own.
//
// Not thread-safe; the caller holds the device's TimingLock. `verify` runs on another thread, never two at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/status.h"
#include "eval/adaptive_trials.h"
#include "eval/process_watch.h"
#include "sandbox/channel.h"
#include "sandbox/worker_session.h"

namespace kgym {

// Timing-pool sets kept out of the rotation, each used by one timed call only (when the pool has room for them).
constexpr int kFreshSets = 3;
inline int FreshSets(int pool_sets) { return pool_sets >= kFreshSets + 2 ? kFreshSets : 0; }

// Pipelined bursts (run after the timed calls): their difference per call is the model's cost with the host's launch
// work overlapped by the device's, from the supervisor's own clock.
struct Bursts {
  int k = 0;                     // calls per burst (0: none ran)
  std::vector<double> model_ms;  // brackets of the model bursts
  std::vector<double> null_ms;   // brackets of the flush-only bursts
};
constexpr int kBursts = 2, kBurstCalls = 8;

// Past an adaptive floor, the share of timed calls fetched (at random).
constexpr double kLateFetchShare = 0.2;

struct TimedCallsParams {
  int warmup = 1;
  int calls = 1;  // the timed calls; with `adaptive`, the most that run
  // Stop early once the median is known well enough (eval/adaptive_trials.h); unset: `calls` calls run. Its floor is
  // clamped to [6, calls].
  std::optional<StopRule> adaptive;
  int rotation_sets = 1;  // sets 0..rotation_sets-1
  int fresh_sets = 0;     // sets rotation_sets.. (call ids calls..)
  double flush_mb = 0;    // the worker's L2 flush buffer (GPU)
  double keep_mb = 0;     // device memory the worker may hold for fetched outputs until FetchKeptOutputs (0: none)
  double keep_free = 0;   // ...only while this share of the device's memory stays free after the copy
  uint64_t seed = 0;      // which calls are fetched, where the fresh calls go
  bool null_calls = false;
  int first_call = 0;        // the first timed call's id
  double drain_wait_s = 0;   // the drain probe's longest wait (0: no probe)
  double idle_null_ms = -1;  // the device's idle null-call time, for the probe's bound (eval/contention.h)
  bool bursts = true;        // the pipelined bursts after the timed calls (false: left to TimedBursts)
  // A fetched call's outputs frame (call id, set); false stops the exchange (the caller keeps why). Unset: no call is
  // fetched (the reference's outputs are its own).
  std::function<bool(int call, int set, const Frame& outputs)> verify;
  // Called before each kept output's fetch (FetchKeptOutputs, outside the lock): quiet timing's wait
  // (eval/timing_lock.h). Unset: none.
  std::function<void()> await_quiet;
  // A free buffer to lend each kept output's fetch (FetchKeptOutputs); unset or null: the worker sends its own memfd.
  std::function<std::shared_ptr<const Region>()> lend;
};

// Where an exchange's time went, in seconds (metadata.timing_lock.hold: what holding the device's lock paid for).
struct ExchangeTimes {
  double calls_s = 0;        // warmup, timed and fresh calls: arm (the worker's refill), go .. done; of which:
  double arm_s = 0;          //   "call" .. "armed" (the worker refills its inputs and flushes the L2)
  double bracket_s = 0;      //   the brackets, "go" .. "done"
  double watch_s = 0;        //   the process watch's readings on both sides of the calls
  double fetch_s = 0;        // fetches: the worker's inspection and copy of a call's outputs, their transfer
  double verify_wait_s = 0;  // the exchange waiting for a comparison (at the next fetch, before the bursts)
  double verify_s = 0;       // the comparisons' own time, on their thread (overlapped with the calls)
  int verified = 0;          // comparisons run
  double null_s = 0, bursts_s = 0;
  double drain_s = 0;  // the drain probe
  nlohmann::json ToJson() const;
  void Add(const ExchangeTimes& o);  // another attempt's
};

struct TimedCallsResult {
  std::vector<double> bracket_ms;  // timed calls 0..calls-1 (trusted)
  std::vector<double> self_ms;     // the worker's own clock for the same calls (-1 where it said nothing)
  std::vector<double> event_ms;    // its CUDA events, where it has them
  std::vector<double> fresh_ms;    // calls on fresh sets
  std::vector<double> null_ms;     // the harness's null calls
  bool drained = true;             // the drain probe saw the device idle (or there was none)
  int drain_probes = 0;
  Bursts bursts;
  bool stopped = false;  // verify returned false
  // With a stop rule: whether it ended the timed calls before the ceiling, and the 95 % interval of the brackets'
  // median when they ended.
  bool stopped_early = false;
  MedianInterval bracket_ci;
  ExchangeTimes times;
  std::vector<std::pair<int, int>> kept;  // (call, set) of the calls whose outputs the worker kept
  double kept_fetch_s = 0;                // FetchKeptOutputs: transfers and comparisons (outside the lock)
};

// A worker's error frame comes back as InvalidArgument whose message is the frame's header (JSON); a reply out of
// order as Internal; a channel failure as it was.
Status StartTimedCalls(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline);
Status TimedCalls(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline, ProcessWatch* watch,
                  TimedCallsResult* out);
// The bursts alone, for an exchange that ran without them (none after a wrong result or below 10 calls), with the
// lock held again. Their time adds to out->times.bursts_s.
Status TimedBursts(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline, ProcessWatch* watch,
                   TimedCallsResult* out);
Status FetchKeptOutputs(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline,
                        TimedCallsResult* out);

}  // namespace kgym
