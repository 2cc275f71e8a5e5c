// The candidate's run as a type, shared by the files of its phases (candidate_run.cc: start, load, timing, judge,
// finish; candidate_correctness.cc: the correctness trials and their rules). Internal to eval: RunCandidate
// (eval/candidate_run.h) is the room's entry point.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include "eval/account.h"
#include "eval/background_check.h"
#include "eval/candidate_facts.h"
#include "eval/candidate_run.h"
#include "eval/contention.h"
#include "eval/gpu_timing.h"
#include "eval/hack_rules.h"
#include "eval/lent_buffers.h"
#include "eval/precision.h"
#include "eval/process_watch.h"
#include "eval/timed_attempts.h"
#include "eval/timed_calls.h"
#include "eval/timing_stats.h"
#include "eval/trial_checks.h"
#include "sandbox/policy.h"
#include "sandbox/process_stats.h"
#include "sandbox/protocol.h"

namespace kgym::candidate_internal {

namespace kind = protocol::kind;
namespace field = protocol::field;

using End = std::optional<Verdict>;  // a phase's result: nothing (go on) or how the run ends

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Memory a candidate's worker may hold for copies of its fetched timed calls' outputs (on their device), so their
// transfer and comparison happen after the timing lock is released (TimedCallsParams::keep_mb, keep_free): on a GPU up
// to 24 GiB, and only while a quarter of the device's memory stays free for the evaluations beside it (a level-1
// problem's dozen verified calls of 2 GB each fit; fetched inside the lock they held it for seconds).
constexpr double kKeepMbCuda = 24 * 1024, kKeepFreeCuda = 0.25, kKeepMbCpu = 64;

// Per watched call, the CPU time of the threads born after the worker's hello (metadata: what the thread rules saw).
inline nlohmann::json NewThreadCpuMs(const WatchEvidence& w) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : w.calls) out.push_back(std::round(c.new_thread_cpu_ms * 1e3) / 1e3);
  return out;
}

// The worker's own seconds per step of an exchange (protocol field worker_s): a profile, reported as it came (numbers
// only), never used for a verdict.
inline nlohmann::json WorkerSteps(const nlohmann::json& header) {
  nlohmann::json out = nlohmann::json::object();
  const auto& w = header.find(field::kWorkerS);
  if (w == header.end() || !w->is_object()) return out;
  for (const auto& [k, v] : w->items())
    if (v.is_number() && out.size() < 8 && k.size() < 32) out[k] = v;
  return out;
}

// What the correctness trials hand on to their rules.
struct TrialOutputs {
  std::vector<const Values*> reference;
  std::vector<bool> same_as_first;                      // the candidate's outputs, per trial
  std::vector<std::vector<OutputPrecision>> precision;  // default trials with an oracle (eval/precision.h)
};

// What the timing phase gathered, for the judgement.
struct TimingEvidence {
  TimedCallsResult calls;
  std::string wrong_result;    // a fetched timed call that did not match ("" = all did)
  nlohmann::json error_frame;  // an error frame in reply to a fetch (null = none)
  bool grad_ran = false;       // the decoy rule's grad-enabled call ran
  std::string grad_error;
  std::unique_ptr<WorkerTimeline> timeline;  // GPU with the recorder: the stream after the last attempt
  LockUse lock_use;                          // the device's timing lock (metadata.timing_lock)
  int attempts = 0;                          // timed again where an attempt shared the device (eval/timed_attempts.h)
  SharedCalls shared;                        // the last attempt's calls that shared the device
  int fresh_first = -1;                      // the fresh calls' ids (the first attempt's)
  int first_call = 0;                        // the last attempt's first call id
};

class CandidateRun {
 public:
  CandidateRun(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl, const RunContext& ctx,
               const ProgressFn& progress, const std::atomic<bool>* cancel, EvalResult* r)
      : req_(req),
        ref_(ref),
        dl_(dl),
        ctx_(ctx),
        progress_(progress),
        cancel_(cancel),
        r_(r),
        t32_{req.atol, req.rtol},
        t16_{req.atol_half, req.rtol_half},
        precision_(ctx.precision) {
    ParsePrecisionPolicy(req.precision, &precision_);  // "" (or unknown): the evaluator's default
  }

  void Run() {
    const Clock::time_point t0 = Clock::now();
    End end = Start();
    facts_.start.worker_start_s =
        Seconds(Clock::now() - t0);  // of the load phase: the worker (spare or fresh) until hello
    if (!end) end = Load();
    if (!end) end = Correctness();
    const bool timed = req_.measure_performance && ref_.timing;
    if (!end && timed) end = Timing();
    if (!end && timed) end = Judge();
    if (end && !end->correct()) r_->correctness = false;
    end.value_or(Verdict::Of(Outcome::kCorrect, correct_detail_)).ApplyTo(r_);
    Finish();
    facts_.WriteTo(&r_->metadata);
  }

 private:
  End Start();
  End Load();
  End Correctness();
  End RunTrials(ProcessWatch* watch, TrialChecks* checks);
  std::shared_ptr<const Region> Lend(nlohmann::json* h, std::vector<std::shared_ptr<const Region>>* regions);
  void CountLent(const Values& got);
  End JudgeCorrectness(const TrialOutputs& outs, int passed, const std::string& problem, const ProcessWatch& watch);
  End JudgePrecisionOf(const TrialOutputs& outs);
  void SetAsidePrecisionFlags();
  End Timing();
  End SendPool();
  TimedCallsParams TimingParams(bool cuda);
  void ReportCallCount(const TimedCallsParams& p);
  Status DetectGrad(bool recorded);
  Status FetchKept(const TimedCallsParams& p, TimedCallsResult* c);
  Status BurstsWhereTheyCount(const TimedCallsParams& p);
  CandidateTimingInputs TimingInputs() const;
  End Judge();
  End JudgeTimingRules();
  void ReportTime();
  void AccountGpuWork();
  void Finish();

  // An exchange that failed: the worker's end (which explains a frame it broke off as it died), channel tampering
  // (r->signals.channel_broken: the evaluator runs such a candidate again, once, eval/evaluator.h; the fact goes to
  // metadata.channel_broken), or a failure of this process's own (WorkerFailureVerdict).
  End SessionFailure(const Status& s) {
    WorkerExit e;
    if (s.code() == Status::Code::kInvalidArgument && w_->WaitExit(Clock::now() + std::chrono::milliseconds(300), &e))
      return WorkerFailureVerdict(w_.get(), s, phase_, dl_, false);
    if (End v = ChannelTamperingRule(s, w_->cancelled())) {
      w_->Kill();
      facts_.start.channel_broken = s.message();
      r_->signals.channel_broken = s.message();  // the evaluator runs such a candidate again (eval/evaluator.h)
      return v;
    }
    return WorkerFailureVerdict(w_.get(), s, phase_, dl_, false);
  }
  End HarnessError(const nlohmann::json& header) {
    Verdict v =
        HarnessErrorVerdict(w_.get(), header, phase_, &facts_.start.compilation_error, &facts_.start.runtime_error);
    r_->compiled = v.outcome != Outcome::kCompileError;  // Triton compiles at its first launch, in correctness
    return v;
  }
  void SamplePeak() {
    if (w_) worker_peak_ = std::max(worker_peak_, ProcessPeakPrivateBytes(w_->harness_pid()));
  }
  // Quiet timing (eval/timing_lock.h): before a step of device work outside the lock, waits while another
  // evaluation's timed calls hold the device.
  void AwaitQuiet() { quiet_wait_s_ += ctx_.timing->AwaitQuiet(TimingLock::DeviceOf(req_)); }
  // Sends `h` and reads the reply into *f (a step of device work: quiet timing waits first, unless the step leads
  // into the timing lock); an error frame or a failure ends the run.
  End Exchange(const nlohmann::json& h, const std::string& payload,
               const std::vector<std::shared_ptr<const Region>>& regions, Frame* f, bool quiet = true) {
    if (quiet) AwaitQuiet();
    Status s = w_->Send(h, payload, regions);
    if (s.ok()) s = w_->RecvReply(dl_.at, f);
    if (!s.ok()) return SessionFailure(s);
    if (f->header.value(field::kType, "") == kind::kError) return HarnessError(f->header);
    return std::nullopt;
  }

  const EvalRequest& req_;
  const ReferenceData& ref_;
  const Deadline dl_;
  const RunContext& ctx_;
  const ProgressFn& progress_;
  const std::atomic<bool>* cancel_;
  EvalResult* r_;
  CandidateFacts facts_;  // what the run found; written into r_->metadata once, at its end (eval/candidate_facts.h)
  const Tolerance t32_, t16_;
  PrecisionPolicy precision_;
  std::unique_ptr<WorkerSession> w_;
  std::string phase_ = "load";
  std::string correct_detail_;
  uint64_t worker_peak_ = 0;
  std::vector<std::string> triton_kernels_;
  int64_t triton_launches_ = 0;
  double quiet_wait_s_ = 0;
  TimingEvidence timing_;
  std::unique_ptr<ProcessWatch> timed_watch_;
  // Outputs of kLendMinBytes or more come back in buffers the evaluation lends its worker (eval/lent_buffers.h;
  // RunContext::lent_buffers of them, 3 by default: the first trial's outputs stay for the constant-output rule, two
  // take turns, one written while the other is compared); null where the outputs are small.
  std::unique_ptr<LentBuffers> lent_;
  std::atomic<int> outputs_lent_{0};  // replies whose outputs came in a lent buffer
  int kept_calls_ = 0;
  double kept_fetch_s_ = 0;
};

}  // namespace kgym::candidate_internal
