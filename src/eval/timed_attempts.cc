#include "eval/timed_attempts.h"

#include "eval/reference.h"
#include "eval/timing_stats.h"

namespace kgym {

Status TimedAttempts::Run(TimedCallsParams p, bool recorded, const Hooks& hooks) {
  Status s;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      p.first_call = attempt * kAttemptIds;
      p.fresh_sets = 0;
      p.seed = MixSeed(p.seed);
      std::vector<double> fresh = std::move(calls.fresh_ms);
      calls = TimedCallsResult{};
      calls.fresh_ms = std::move(fresh);
    }
    last = p;
    {
      TimedHold hold(locks_, device_, use_, w_);
      p.idle_null_ms = locks_->IdleNullMs(device_);
      s = TimedCalls(w_, p, deadline_, watch_, &calls);
      if (s.ok() && attempt == 0 && hooks.under_lock) s = hooks.under_lock();
    }
    if (s.ok() && calls.drained && !calls.null_ms.empty()) locks_->NoteIdleNullMs(device_, Median(calls.null_ms));
    times.Add(calls.times);
    attempts = attempt + 1;
    if (s.ok() && hooks.after_lock) s = hooks.after_lock(&calls);
    timeline.reset();
    if (!s.ok() || !recorded || (hooks.timeline_wanted && !hooks.timeline_wanted())) return s;
    timeline = std::make_unique<WorkerTimeline>();
    const Clock::time_point f0 = Clock::now();
    timeline_status = FetchTimeline(w_, deadline_, timeline.get());
    timeline_fetch_s += std::chrono::duration<double>(Clock::now() - f0).count();
    if (!timeline_status.ok() && timeline->problem.empty()) timeline->problem = timeline_status.ToString();
    if (!timeline_status.ok() || !timeline->ok) return s;
    FindShared(p);
    if ((calls.drained && shared.clean) || attempt + 1 >= kTimingAttempts) return s;
  }
}

// The attempt's calls that shared the device, from their busy time on the timeline (eval/contention.h).
void TimedAttempts::FindShared(const TimedCallsParams& p) {
  const int n = static_cast<int>(calls.bracket_ms.size());
  const TimedSpans sp = SpansOfTimedCalls(timeline->timeline, n, p.first_call);
  shared = SharedCalls{};
  if (sp.missing > 0 || static_cast<int>(sp.busy_ms.size()) != n) return;
  std::vector<int> sets;
  for (int i = 0; i < n; ++i) sets.push_back(i % p.rotation_sets);
  shared = FindSharedCalls(sp.busy_ms, sets, &set_least_);
}

}  // namespace kgym
