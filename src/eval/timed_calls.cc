#include "eval/timed_calls.h"

#include <signal.h>

#include <algorithm>
#include <memory>
#include <random>

#include "eval/background_check.h"
#include "eval/contention.h"
#include "fault/fault_points.h"
#include "sandbox/protocol.h"

namespace kgym {

namespace kind = protocol::kind;
namespace field = protocol::field;

namespace {

// The plan of one exchange: which timed calls are fetched, how many fresh and null calls go before each.
struct Plan {
  std::vector<bool> fetch;
  std::vector<int> fresh_before, null_before;
};

// The calls within which every check is placed: all of them, or an adaptive rule's floor.
int CheckedWindow(const TimedCallsParams& p) {
  return p.adaptive ? std::clamp(p.adaptive->floor, std::min(6, p.calls), p.calls) : p.calls;
}

Plan MakePlan(const TimedCallsParams& p) {
  const int n = p.calls, w = CheckedWindow(p);
  std::mt19937_64 rng(p.seed);
  Plan plan;
  plan.fetch.assign(n, false);
  for (int k = 0; k < std::min(w, 8); ++k) plan.fetch[rng() % w] = true;
  for (int i = w; i < n; ++i) plan.fetch[i] = rng() % 1000 < kLateFetchShare * 1000;
  if (n > 0) plan.fetch[n - 1] = true;
  if (!p.verify) plan.fetch.assign(n, false);  // drawn all the same: the rest of the plan does not depend on it
  plan.fresh_before.assign(std::max(n, 1), 0);
  for (int k = 0; k < p.fresh_sets && w > 0; ++k) plan.fresh_before[rng() % w]++;
  plan.null_before.assign(std::max(n, 1), 0);
  if (p.null_calls && w > 0) {
    const int k = std::clamp(w / 10, 3, 10);
    for (int j = 0; j < k; ++j) plan.null_before[static_cast<size_t>(j) * w / k]++;
  }
  return plan;
}

// Hands one fetched outputs frame to `verify`: an error frame at once (after the outstanding comparison), outputs on
// the check's thread. False once verification has failed (this frame or an earlier one).
bool HandOver(BackgroundCheck* check, const TimedCallsParams& p, int id, int set,
              std::shared_ptr<const Frame> outputs) {
  if (outputs->header.value(field::kType, "") == kind::kError) return check->Wait() && p.verify(id, set, *outputs);
  const auto& verify = p.verify;
  return check->Submit([&verify, id, set, outputs] { return verify(id, set, *outputs); });
}

// Warmup calls: the requested ones, and one per rotation set where the timed calls revisit the sets too few times for
// their first visits (the misses of a cache keyed on the inputs' content) to stay under a quarter of the calls; the
// median of the rotation then shows the cache's hits against the fresh sets' misses either way.
int Warmups(const TimedCallsParams& p) {
  const int asked = std::max(1, p.warmup);
  return 4 * p.rotation_sets <= CheckedWindow(p) ? asked : std::max(asked, p.rotation_sets);
}

class Exchange {
 public:
  Exchange(WorkerSession* w, const TimedCallsParams& p, Clock::time_point deadline, ProcessWatch* watch,
           TimedCallsResult* out)
      : w_(w), p_(p), deadline_(deadline), watch_(watch), out_(out), warmup_(Warmups(p)) {}

  // Every comparison has finished when this returns (the frames they hold are gone with them). A wrong result wins
  // over a failure of a later call: an exchange that compared at once never made that call.
  Status Run() {
    Status s = Calls();
    Join();
    return !s.ok() && out_->stopped ? Status::Ok() : s;
  }

 private:
  Status Calls() {
    const Plan plan = MakePlan(p_);
    Status s = p_.drain_wait_s > 0 ? Drain() : Status::Ok();
    for (int i = -warmup_; i < p_.calls && !Stopped() && s.ok(); ++i) {
      if (i < 0) {
        s = Call(i, (i + warmup_) % p_.rotation_sets, false, nullptr);
      } else {
        for (int k = 0; k < plan.null_before[i] && s.ok(); ++k) s = NullCall();
        for (int k = 0; k < plan.fresh_before[i] && s.ok() && !Stopped(); ++k) {
          const int j = static_cast<int>(out_->fresh_ms.size());
          s = Call(p_.first_call + p_.calls + j, p_.rotation_sets + j, !!p_.verify, &out_->fresh_ms);
        }
        if (s.ok() && !Stopped()) s = Call(p_.first_call + i, i % p_.rotation_sets, plan.fetch[i], &out_->bracket_ms);
      }
      if (!s.ok()) return s;
      if (out_->stopped_early) break;
    }
    if (p_.adaptive) out_->bracket_ci = MedianConfidenceInterval(out_->bracket_ms, p_.adaptive->confidence);
    if (out_->stopped || !p_.bursts) return Status::Ok();
    Join();  // a wrong result skips the bursts, as it always did
    return LaterBursts();
  }

 public:
  // The bursts, from 10 timed calls on and never after a wrong result (here, or for TimedBursts: an exchange whose
  // calls ran before).
  Status LaterBursts() { return out_->stopped || out_->bracket_ms.size() < 10 ? Status::Ok() : RunBursts(); }

 private:
  // True once verify said no: at once for an error frame, as soon as a comparison is seen to have failed otherwise.
  bool Stopped() {
    if (!out_->stopped && check_.Failed()) out_->stopped = true;
    return out_->stopped;
  }
  void Join() {
    if (!check_.Wait()) out_->stopped = true;
    out_->times.verify_wait_s = check_.wait_s();
    out_->times.verify_s = check_.busy_s();
    out_->times.verified = check_.checks();
  }
  double Since(Clock::time_point t0) const { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  static Status Expect(const Frame& f, const char* want) {
    const std::string got = f.header.value(field::kType, "");
    if (got == kind::kError) return Status::InvalidArgument(f.header.dump());
    if (got != want) return Status::Internal("worker broke the timing protocol");
    return Status::Ok();
  }

  // `arm` makes the worker prepare and answer "armed"; the clock starts when the supervisor itself sends "go" and
  // stops when "done" arrives. A busy host once made "start"/"done" pairs arrive together: both ends are the
  // supervisor's own observations.
  Status Bracketed(const nlohmann::json& arm, const std::function<void()>& before_go, Frame* done, double* ms) {
    Frame armed;
    Status s = w_->Send(arm);
    if (s.ok()) s = w_->RecvReply(deadline_, &armed);
    if (s.ok()) s = Expect(armed, kind::kArmed);
    if (!s.ok()) return s;
    before_go();
    const Clock::time_point t0 = Clock::now();
    s = w_->Send({{field::kType, kind::kGo}, {field::kCall, arm[field::kCall]}});
    if (s.ok()) s = w_->RecvReply(deadline_, done);
    if (s.ok()) s = Expect(*done, kind::kDone);
    if (!s.ok()) return s;
    *ms = std::chrono::duration<double, std::milli>(done->received - t0).count();
    return Status::Ok();
  }

  // One model call on `set` ("call" refills the worker's inputs from it before it answers "armed"). `into` is null
  // for warmups: they count for the CPU split (never fetched; the first two may still build lazy state), not for
  // threads.
  Status Call(int id, int set, bool check, std::vector<double>* into) {
    const bool watched = watch_ && (into != nullptr || id >= -warmup_ + 2);
    Frame done;
    double ms = 0, watch_s = 0;
    const Clock::time_point c0 = Clock::now();
    Status s = Bracketed(
        {{field::kType, kind::kCall}, {field::kCall, id}, {field::kSet, set}},
        [&] {
          const Clock::time_point w0 = Clock::now();
          if (watched)
            watch_->Before(into != nullptr);
          else if (watch_)
            watch_->Skip();
          watch_s += Since(w0);
        },
        &done, &ms);
    const double arm_s = Since(c0) - ms / 1000 - watch_s;  // "call" .. "armed", and the messages' own time
    if (s.ok() && watched) {
      const Clock::time_point w0 = Clock::now();
      watch_->After(into != nullptr, !check);
      watch_s += Since(w0);
    }
    out_->times.calls_s += Since(c0);
    out_->times.watch_s += watch_s;
    if (!s.ok()) return s;
    out_->times.bracket_s += ms / 1000;
    out_->times.arm_s += arm_s;
    if (!into) return Status::Ok();
    into->push_back(ms);
    if (into == &out_->bracket_ms) {
      out_->self_ms.push_back(done.header.value(field::kSelfMs, -1.0));
      if (done.header.contains(field::kEventMs) && done.header[field::kEventMs].is_number())
        out_->event_ms.push_back(done.header[field::kEventMs].get<double>());
      // The stop rule, on the supervisor's own brackets; the call it stops at is always fetched.
      if (p_.adaptive && static_cast<int>(out_->bracket_ms.size()) < p_.calls &&
          static_cast<int>(out_->bracket_ms.size()) >= CheckedWindow(p_) &&
          EnoughCalls(*p_.adaptive, out_->bracket_ms)) {
        out_->stopped_early = true;
        check = check || !!p_.verify;
      }
    }
    if (!check) return Status::Ok();
    auto outputs = std::make_shared<Frame>();
    const Clock::time_point f0 = Clock::now();
    s = w_->Send(
        {{field::kType, kind::kFetch}, {field::kCall, id}, {field::kSet, set}, {field::kKeep, p_.keep_mb > 0}});
    if (s.ok()) s = w_->RecvReply(deadline_, outputs.get());
    out_->times.fetch_s += Since(f0);
    if (!s.ok()) return s;
    if (outputs->header.value(field::kType, "") == kind::kKept) {
      if (outputs->header.value(field::kCall, id - 1) != id)
        return Status::Internal("worker broke the timing protocol");
      out_->kept.emplace_back(id, set);
      return Status::Ok();
    }
    // An error frame (the worker's end) is judged at once and stops the exchange: nothing more is sent.
    if (!HandOver(&check_, p_, id, set, outputs)) out_->stopped = true;
    return Status::Ok();
  }

  // The drain probe (eval/contention.h): null calls until two in a row are within the device's idle time, or the
  // wait is over. Their ids are apart from the null calls' (the recorder tags them alike).
  Status Drain() {
    if (watch_) watch_->Skip();
    const double bound = IdleNullBound(p_.idle_null_ms);
    const Clock::time_point t0 = Clock::now();
    out_->drained = false;
    for (int in_a_row = 0; !out_->drained;) {
      Frame done;
      double ms = 0;
      Status s = Bracketed(
          {{field::kType, kind::kNull}, {field::kCall, kProbeIds + out_->drain_probes}}, [] {}, &done, &ms);
      if (!s.ok()) return s;
      ++out_->drain_probes;
      in_a_row = ms <= bound ? in_a_row + 1 : 0;
      out_->drained = in_a_row >= 2;
      if (Since(t0) >= p_.drain_wait_s) break;
    }
    out_->times.drain_s += Since(t0);
    return Status::Ok();
  }
  static constexpr int kProbeIds = 1 << 20;

  // The harness's own call: one tiny kernel, no model code.
  Status NullCall() {
    if (watch_) watch_->Skip();  // the CPU between calls is judged on model calls only
    Frame done;
    double ms = 0;
    const Clock::time_point n0 = Clock::now();
    Status s = Bracketed(
        {{field::kType, kind::kNull}, {field::kCall, static_cast<int>(out_->null_ms.size())}}, [] {}, &done, &ms);
    out_->times.null_s += Since(n0);
    if (s.ok()) out_->null_ms.push_back(ms);
    return s;
  }

  Status RunBursts() {
    const Clock::time_point b0 = Clock::now();
    Status s = BurstExchange();
    out_->times.bursts_s += Since(b0);
    return s;
  }
  Status BurstExchange() {
    Bursts& b = out_->bursts;
    b.k = std::clamp(static_cast<int>(out_->bracket_ms.size()) / 5, 2, kBurstCalls);  // 2 x 8 from 40 timed calls
    for (int i = 0; i < kBursts; ++i) {
      for (bool model : {false, true}) {
        if (watch_) watch_->Skip();  // judged on single calls only
        Frame done;
        double ms = 0;
        Status s = Bracketed(
            {{field::kType, kind::kBurst},
             {field::kCall, i},
             {field::kSet, i % p_.rotation_sets},
             {field::kK, b.k},
             {field::kModel, model}},
            [] {}, &done, &ms);
        if (!s.ok()) return s;
        (model ? b.model_ms : b.null_ms).push_back(ms);
      }
    }
    return Status::Ok();
  }

  WorkerSession* w_;
  const TimedCallsParams& p_;
  const Clock::time_point deadline_;
  ProcessWatch* watch_;
  TimedCallsResult* out_;
  const int warmup_;
  BackgroundCheck check_;
};

}  // namespace

nlohmann::json ExchangeTimes::ToJson() const {
  return {{"calls_s", calls_s},   {"arm_s", arm_s},       {"bracket_s", bracket_s},
          {"watch_s", watch_s},   {"fetch_s", fetch_s},   {"verify_wait_s", verify_wait_s},
          {"verify_s", verify_s}, {"verified", verified}, {"null_s", null_s},
          {"bursts_s", bursts_s}, {"drain_s", drain_s}};
}

void ExchangeTimes::Add(const ExchangeTimes& o) {
  calls_s += o.calls_s;
  arm_s += o.arm_s;
  bracket_s += o.bracket_s;
  watch_s += o.watch_s;
  fetch_s += o.fetch_s;
  verify_wait_s += o.verify_wait_s;
  verify_s += o.verify_s;
  verified += o.verified;
  null_s += o.null_s;
  bursts_s += o.bursts_s;
  drain_s += o.drain_s;
}

Status StartTimedCalls(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline) {
  Frame f;
  Status s = w->Send({{field::kType, kind::kTiming},
                      {field::kFlushMb, params.flush_mb},
                      {field::kKeepMb, params.keep_mb},
                      {field::kKeepFree, params.keep_free}});
  if (s.ok()) s = w->RecvReply(deadline, &f);
  if (!s.ok()) return s;
  const std::string got = f.header.value(field::kType, "");
  if (got == kind::kError) return Status::InvalidArgument(f.header.dump());
  if (got != kind::kOk) return Status::Internal("worker broke the timing protocol");
  return Status::Ok();
}

Status TimedCalls(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline, ProcessWatch* watch,
                  TimedCallsResult* out) {
  // The fault point timing_lock.holder (fault/fault_points.h): the worker dies while its evaluation holds the device's
  // timing lock, killed from outside as the host's OOM killer kills (its harness process, SIGKILL).
  if (fault::Hit("timing_lock.holder") && w->harness_pid() > 0) ::kill(w->harness_pid(), SIGKILL);
  return Exchange(w, params, deadline, watch, out).Run();
}

Status TimedBursts(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline, ProcessWatch* watch,
                   TimedCallsResult* out) {
  return Exchange(w, params, deadline, watch, out).LaterBursts();
}

Status FetchKeptOutputs(WorkerSession* w, const TimedCallsParams& params, Clock::time_point deadline,
                        TimedCallsResult* out) {
  const Clock::time_point t0 = Clock::now();
  Status s;
  {
    BackgroundCheck check;
    for (const auto& [id, set] : out->kept) {
      if (out->stopped || check.Failed()) break;
      auto outputs = std::make_shared<Frame>();
      if (params.await_quiet) params.await_quiet();
      std::shared_ptr<const Region> lent = params.lend ? params.lend() : nullptr;
      nlohmann::json h = {{field::kType, kind::kFetchKept}, {field::kCall, id}};
      if (lent) h[field::kOutRegion] = 0;
      s = lent ? w->Send(h, "", {lent}) : w->Send(h);
      if (s.ok()) s = w->RecvReply(deadline, outputs.get());
      if (!s.ok()) break;
      if (lent) outputs->regions.push_back(std::move(lent));
      if (!HandOver(&check, params, id, set, outputs)) break;
    }
    if (!check.Wait()) out->stopped = true;
  }
  out->kept_fetch_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return out->stopped ? Status::Ok() : s;
}

}  // namespace kgym
