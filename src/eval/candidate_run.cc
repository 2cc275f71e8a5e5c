#include "eval/candidate_run.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "eval/account.h"
#include "eval/background_check.h"
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

namespace kgym {

namespace kind = protocol::kind;
namespace field = protocol::field;

namespace {

using End = std::optional<Verdict>;  // a phase's result: nothing (go on) or how the run ends

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Memory a candidate's worker may hold for copies of its fetched timed calls' outputs (on their device), so their
// transfer and comparison happen after the timing lock is released (TimedCallsParams::keep_mb, keep_free): on a GPU up
// to 24 GiB, and only while a quarter of the device's memory stays free for the evaluations beside it (a level-1
// problem's dozen verified calls of 2 GB each fit; fetched inside the lock they held it for seconds).
constexpr double kKeepMbCuda = 24 * 1024, kKeepFreeCuda = 0.25, kKeepMbCpu = 64;

// Per watched call, the CPU time of the threads born after the worker's hello (metadata: what the thread rules saw).
nlohmann::json NewThreadCpuMs(const WatchEvidence& w) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : w.calls) out.push_back(std::round(c.new_thread_cpu_ms * 1e3) / 1e3);
  return out;
}

// The worker's own seconds per step of an exchange (protocol field worker_s): a profile, reported as it came (numbers
// only), never used for a verdict.
nlohmann::json WorkerSteps(const nlohmann::json& header) {
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
        md_(r->metadata),
        t32_{req.atol, req.rtol},
        t16_{req.atol_half, req.rtol_half},
        precision_(ctx.precision) {
    ParsePrecisionPolicy(req.precision, &precision_);  // "" (or unknown): the evaluator's default
  }

  void Run() {
    const Clock::time_point t0 = Clock::now();
    End end = Start();
    md_["worker_start_s"] = Seconds(Clock::now() - t0);  // of the load phase: the worker (spare or fresh) until hello
    if (!end) end = Load();
    if (!end) end = Correctness();
    const bool timed = req_.measure_performance && ref_.timing;
    if (!end && timed) end = Timing();
    if (!end && timed) end = Judge();
    if (end && !end->correct()) r_->correctness = false;
    end.value_or(Verdict::Of(Outcome::kCorrect, correct_detail_)).ApplyTo(r_);
    Finish();
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
  // (noted as metadata.channel_broken: the evaluator runs such a candidate again, once, eval/evaluator.h), or a
  // failure of this process's own (WorkerFailureVerdict).
  End SessionFailure(const Status& s) {
    WorkerExit e;
    if (s.code() == Status::Code::kInvalidArgument && w_->WaitExit(Clock::now() + std::chrono::milliseconds(300), &e))
      return WorkerFailureVerdict(w_.get(), s, phase_, dl_, false);
    if (End v = ChannelTamperingRule(s, w_->cancelled())) {
      w_->Kill();
      md_["channel_broken"] = s.message();
      return v;
    }
    return WorkerFailureVerdict(w_.get(), s, phase_, dl_, false);
  }
  End HarnessError(const nlohmann::json& header) {
    Verdict v = HarnessErrorVerdict(w_.get(), header, phase_, &md_);
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
  nlohmann::json& md_;
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

// ---- start ----

End CandidateRun::Start() {
  ExtensionCache::Entry ext;  // CUDA backend: this source's build cache (a failure to make it only costs time)
  if (req_.backend == "cuda") {
    Status cs = ctx_.extension_cache->Prepare(req_.kernel_code, &ext);
    if (!cs.ok()) {
      md_["extension_cache_error"] = cs.message();
      ext = {};
    }
  }
  std::string how;
  Status s = ctx_.workers->StartCandidate(req_, ext.dir, dl_.at, &w_, &how);
  md_["candidate_worker"] = how;
  if (w_) w_->SetCancel(cancel_ ? cancel_ : ctx_.cancel_all);
  if (!s.ok()) {
    // Nothing of the candidate has run yet (its code goes out with the job, after the hello): whatever stopped the
    // worker here is not its doing.
    if (w_ && w_->cancelled()) return WorkerFailureVerdict(w_.get(), s, "start", dl_, false);
    w_.reset();
    return Verdict::System("could not start the candidate worker: " + s.ToString());
  }
  md_["sandbox"] = w_->hello().value(field::kProtections, nlohmann::json::object());
  const bool sealed = ctx_.sandbox && !req_.unsafe_no_sandbox;
  if (!ext.dir.empty()) {  // "hit" only when the worker got the directory that held a build
    const bool given = md_["sandbox"].contains("extension_cache") || !sealed;
    md_["extension_cache"] = !given ? "off" : ext.hit ? "hit" : "miss";
  }
  if (!sealed) return std::nullopt;
  std::string missing;
  for (const auto& x : MissingProtections(md_["sandbox"])) missing += (missing.empty() ? "" : ", ") + x;
  if (missing.empty()) return std::nullopt;
  w_.reset();  // never given the candidate's code
  return Verdict::System("refusing to run the candidate unsealed: missing " + missing +
                         " (see `kgym doctor`; --unsafe-no-sandbox runs it anyway)");
}

// ---- load ----

End CandidateRun::Load() {
  nlohmann::json job = {{field::kType, kind::kJob},
                        {field::kCode, req_.kernel_code},
                        {field::kClassName, req_.entry_point + "New"},
                        {field::kDevice, req_.device == "cuda" ? "cuda" : "cpu"},
                        {field::kSize, req_.size},
                        {field::kInitSeed, ref_.init_seed},
                        {field::kTrainMode, req_.train_mode}};
  std::string payload;
  EncodeValues(ref_.init, field::kInit, &job, &payload);
  Frame f;
  AwaitQuiet();
  Status s = w_->Send(job, payload);
  if (s.ok()) s = w_->RecvReply(dl_.at, &f);
  if (!s.ok()) return SessionFailure(s);
  const auto& load_s = w_->notes().find(protocol::note::kLoadS);
  if (load_s != w_->notes().end() && load_s->is_number()) md_["load_s"] = *load_s;
  if (f.header.value(field::kType, "") == kind::kError) return HarnessError(f.header);
  r_->compiled = true;
  const auto& kernels = f.header.find(field::kTritonKernels);
  if (kernels != f.header.end() && kernels->is_array())
    for (const auto& k : *kernels)
      if (k.is_string() && triton_kernels_.size() < 64) triton_kernels_.push_back(k.get<std::string>());
  return std::nullopt;
}

// ---- correctness ----

// The trials, in order: each one's exchange, then its comparison on the checks' thread while the next one runs. Stops
// at the first comparison known to have failed. A trial that fails after an earlier one compared wrong would never
// have run one trial at a time: that wrong result is then the verdict (nothing is returned; Correctness judges it).
End CandidateRun::RunTrials(ProcessWatch* watch, TrialChecks* checks) {
  int index = 0;
  for (const auto& t : ref_.trials) {
    if (t.skipped) continue;
    if (!checks->Going()) return std::nullopt;
    nlohmann::json h = {{field::kType, kind::kTrial}, {field::kIndex, index++}};
    std::string p;
    std::vector<std::shared_ptr<const Region>> regions;  // the reference's sealed inputs, shared without a copy
    EncodeValues(t.inputs, field::kInputs, &h, &p, &regions);
    std::shared_ptr<const Region> lent = Lend(&h, &regions);
    Frame f;
    const Clock::time_point t0 = Clock::now();
    watch->Before();
    End end = Exchange(h, p, regions, &f);
    if (lent) f.regions.push_back(std::move(lent));  // named by the reply as the region after its own
    auto trial = std::make_unique<TrialChecks::Trial>();
    trial->ref = &t;
    if (!end) {
      watch->After();
      trial->exchange_s = Seconds(Clock::now() - t0);  // inputs out, the worker's steps, outputs back
      trial->worker_s = WorkerSteps(f.header);
      const auto& launches = f.header.find(field::kTritonLaunches);
      if (launches != f.header.end() && launches->is_number_integer())
        trial->triton_launches = launches->get<int64_t>();
      Status s = DecodeValues(f.header, field::kOutputs, f.payload, f.regions, &trial->got);
      if (!s.ok()) end = Verdict::Of(Outcome::kIncorrect, "the candidate's outputs could not be read: " + s.message());
    }
    if (end) return checks->AllPassed() ? end : std::nullopt;
    CountLent(trial->got);
    checks->Submit(std::move(trial));
  }
  return std::nullopt;
}

// Lends a free buffer for the reply's outputs, where there are lent buffers: appended to the message's regions, its
// index in `h`.
std::shared_ptr<const Region> CandidateRun::Lend(nlohmann::json* h,
                                                 std::vector<std::shared_ptr<const Region>>* regions) {
  std::shared_ptr<const Region> b = lent_ ? lent_->Free() : nullptr;
  if (!b) return nullptr;
  (*h)[field::kOutRegion] = regions->size();
  regions->push_back(b);
  return b;
}

void CandidateRun::CountLent(const Values& got) {
  if (lent_ && lent_->Holds(got)) ++outputs_lent_;
}

End CandidateRun::Correctness() {
  if (progress_) progress_("correctness");
  phase_ = "correctness";
  ProcessWatch watch(w_->harness_pid(), w_->hello_threads(), /*count_threads=*/true, CpuClock::kOff, kSettleCalls);
  if (const size_t bytes = LendBytes(ref_, ctx_.lent_buffers))
    lent_ = std::make_unique<LentBuffers>(bytes, ctx_.lent_buffers);
  TrialChecks checks(t32_, t16_);
  if (End end = RunTrials(&watch, &checks)) return end;
  const auto& trials = checks.Finish();  // up to the first that compared wrong
  TrialOutputs outs;
  nlohmann::json log = nlohmann::json::array(), max_diff = nlohmann::json::array(), avg_diff = max_diff;
  int passed = 0;
  std::string problem;
  for (auto& tr : trials) {
    const Comparison& c = tr->c;
    log.push_back({{"variant", tr->ref->variant},
                   {"ok", c.ok},
                   {"max_abs_diff", c.max_abs_diff},
                   {"mean_abs_diff", c.mean_abs_diff},
                   {"rel_l2", c.rel_l2},
                   {"problem", c.problem},
                   {"exchange_s", tr->exchange_s},
                   {"compare_s", tr->compare_s},
                   {"worker_s", tr->worker_s}});
    if (!c.ok) {
      max_diff.push_back(c.max_abs_diff);
      avg_diff.push_back(c.mean_abs_diff);
      problem = (tr->ref->variant == "default" ? "" : "on " + tr->ref->variant + " inputs: ") + c.problem;
      break;
    }
    ++passed;
    if (tr->triton_launches >= 0) triton_launches_ = tr->triton_launches;
    outs.reference.push_back(&tr->ref->outputs);
    outs.same_as_first.push_back(tr->same_as_first);
    if (tr->ref->variant == "default" && !tr->precision.empty()) outs.precision.push_back(tr->precision);
  }
  r_->correctness_detail = {{"trials", log}, {"atol", req_.atol}, {"rtol", req_.rtol}};
  md_["correctness_trials"] = "(" + std::to_string(passed) + " / " + std::to_string(trials.size()) + ")";
  if (!max_diff.empty()) {
    md_["max_difference"] = max_diff;
    md_["avg_difference"] = avg_diff;
  }
  return JudgeCorrectness(outs, passed, problem, watch);
}

// The correctness rules, in order: in-process evidence, wrong values, threads seen from outside, constant output,
// decoy launches.
End CandidateRun::JudgeCorrectness(const TrialOutputs& outs, int passed, const std::string& problem,
                                   const ProcessWatch& watch) {
  const WatchEvidence& ev = watch.evidence();
  md_["correctness_new_thread_cpu_ms"] = NewThreadCpuMs(ev);
  SetAsidePrecisionFlags();
  if (End v = InProcessEvidenceRule(w_->evidence(), ev, "")) {
    md_["hack_evidence"] = w_->evidence();
    return v;
  }
  if (!w_->evidence().empty()) {  // only thread injection the outside watch showed idle: told, not judged
    md_["idle_threads_evidence"] = w_->evidence();
    w_->evidence() = nlohmann::json::array();
  }
  if (!problem.empty()) {
    md_["correctness_issue"] = problem;
    return Verdict::Of(Outcome::kIncorrect, problem);
  }
  md_["correctness_thread_growth_calls"] = ev.Growth();
  if (End v = ThreadGrowthRule(ev, "")) return v;
  if (End v = ConstantOutputRule(outs.reference, outs.same_as_first)) return v;
  md_["triton_kernels_defined"] = triton_kernels_;
  md_["triton_launches_in_correctness"] = triton_launches_;
  if (req_.detect_decoy && req_.backend == "triton")
    if (End v = DecoyLaunchRule(triton_kernels_, triton_launches_, passed)) return v;
  if (End v = JudgePrecisionOf(outs)) return v;
  r_->correctness = true;
  correct_detail_ = "correct on " + std::to_string(passed) + " trials";
  if (ref_.notes.value("reference_insensitive", false))  // CheckSensitivity (eval/reference_run.cc)
    correct_detail_ +=
        "; warning: the reference gave the same outputs on every trial's inputs, so a constant "
        "output passes (a degenerate problem at these sizes)";
  return std::nullopt;
}

// The precision class against the fp64 oracle (metadata.precision), and the strict policy's verdict on it.
End CandidateRun::JudgePrecisionOf(const TrialOutputs& outs) {
  const PrecisionJudgement j =
      JudgePrecision(outs.precision, ref_.notes.value(protocol::note::kPrecisionLevels, nlohmann::json::object()));
  md_["precision"] = j.ToJson();
  md_["precision"]["policy"] = PrecisionPolicyName(precision_);
  return PrecisionDowngradeRule(j, precision_);
}

// Under compat, a changed backend flag (allow_tf32, ...) is judged like a downgrade inside a kernel: by the outputs'
// precision, which compat reports and does not judge. The flags seen stay in metadata.precision_flags_evidence.
void CandidateRun::SetAsidePrecisionFlags() {
  if (precision_ != PrecisionPolicy::kCompat || !w_->evidence().is_array()) return;
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& e : w_->evidence()) {
    if (e.is_array() && !e.empty() && e[0] == protocol::evidence::kPrecisionDowngrade)
      md_["precision_flags_evidence"] = e;
    else
      kept.push_back(e);
  }
  w_->evidence() = kept;
}

// ---- timing ----

// The reference's timing sets, refilled into the worker's inputs before every call. They and the worker's readying
// of its inputs lead into the timing lock, so quiet timing does not hold them back: waiting there for each other hold
// to end idled the lock (runs 15-16: ~2 s of quiet wait per candidate, occupancy 0.52 against 0.65).
End CandidateRun::SendPool() {
  for (const auto& t : ref_.pool) {
    nlohmann::json h = {{field::kType, kind::kPoolSet}};
    std::string p;
    std::vector<std::shared_ptr<const Region>> regions;
    EncodeValues(t.inputs, field::kInputs, &h, &p, &regions);
    Frame f;
    if (End end = Exchange(h, p, regions, &f, /*quiet=*/false)) return end;
  }
  return std::nullopt;
}

End CandidateRun::Timing() {
  if (progress_) progress_("timing");
  phase_ = "timing";
  const Clock::time_point pool0 = Clock::now();
  if (End end = SendPool()) return end;
  md_["timing_pool_s"] = Seconds(Clock::now() - pool0);
  const bool cuda = req_.device == "cuda";
  const bool recorded = cuda && w_->hello().value(field::kRecorder, "") == "on" && ref_.device.span_median_ms >= 0;
  const TimedCallsParams p = TimingParams(cuda);
  // Counted afresh: threads a lazy pool started in the first trials do not carry over.
  timed_watch_ = std::make_unique<ProcessWatch>(w_->harness_pid(), w_->hello_threads(), true, CpuClockFor(req_.device));
  // The worker readies its live inputs and flush buffer before the lock: only the timed part holds the device.
  const Clock::time_point prepare0 = Clock::now();
  Status s = StartTimedCalls(w_.get(), p, dl_.at);
  md_["timing_prepare_s"] = Seconds(Clock::now() - prepare0);
  TimedAttempts a(w_.get(), ctx_.timing, TimingLock::DeviceOf(req_), dl_.at, timed_watch_.get(), &timing_.lock_use);
  if (s.ok()) {
    TimedAttempts::Hooks hooks;
    hooks.under_lock = [&] { return DetectGrad(recorded); };
    // The kept outputs travel and are compared after each attempt's hold, with the device free for other timed calls.
    hooks.after_lock = [&](TimedCallsResult* c) { return FetchKept(p, c); };
    hooks.timeline_wanted = [&] { return timing_.error_frame.is_null() && timing_.wrong_result.empty(); };
    s = a.Run(p, recorded, hooks);
    if (s.ok()) s = a.timeline_status;
  }
  timing_.calls = std::move(a.calls);
  timing_.timeline = std::move(a.timeline);
  timing_.shared = a.shared;
  timing_.attempts = a.attempts;
  timing_.first_call = a.last.first_call;
  md_["timeline_fetch_s"] = a.timeline_fetch_s;
  if (timing_.timeline && s.ok()) s = BurstsWhereTheyCount(a.last);
  ReportCallCount(p);
  const nlohmann::json parts = a.times.ToJson();  // named: items() refers to it
  for (auto& [k, x] : parts.items()) timing_.lock_use.hold[k] = x;
  md_["timing_lock"] = timing_.lock_use.ToJson();
  if (s.code() == Status::Code::kInvalidArgument) {
    auto h = nlohmann::json::parse(s.message(), nullptr, false);
    if (h.is_object()) return HarnessError(h);
  }
  if (!s.ok()) return SessionFailure(s);
  if (!timing_.error_frame.is_null()) return HarnessError(timing_.error_frame);
  return std::nullopt;
}

// An attempt's kept outputs, fetched and compared outside the lock.
Status CandidateRun::FetchKept(const TimedCallsParams& p, TimedCallsResult* c) {
  if (c->kept.empty()) return Status::Ok();
  Status s = FetchKeptOutputs(w_.get(), p, dl_.at, c);
  kept_calls_ += static_cast<int>(c->kept.size());
  kept_fetch_s_ += c->kept_fetch_s;
  md_["timing_kept_calls"] = kept_calls_;
  md_["timing_kept_fetch_s"] = kept_fetch_s_;
  return s;
}

// How many timed calls ran and why they stopped (adaptive trials: the median's interval when they did).
void CandidateRun::ReportCallCount(const TimedCallsParams& p) {
  const auto& c = timing_.calls;
  md_["timing_calls"] = c.bracket_ms.size();
  if (p.drain_wait_s > 0) {  // exclusive device time's second line (eval/contention.h)
    md_["timing_attempts"] = timing_.attempts;
    md_["timing_drained"] = c.drained;
    md_["timing_drain_probes"] = c.drain_probes;
    md_["timing_shared_calls"] = timing_.shared.count;
    if (!c.drained || !timing_.shared.clean) md_["timing_contended"] = true;
  }
  if (!p.adaptive) return;
  md_["timing_min_calls"] = p.adaptive->floor;
  md_["timing_stopped"] = c.stopped_early ? "interval" : "ceiling";
  if (c.bracket_ci.known) {
    md_["timing_median_ci_ms"] = {c.bracket_ci.lo, c.bracket_ci.hi};
    md_["timing_median_ci_rel"] = c.bracket_ci.RelativeHalfWidth();
  }
}

TimedCallsParams CandidateRun::TimingParams(bool cuda) {
  const int sets = static_cast<int>(ref_.pool.size());
  TimedCallsParams p;
  p.warmup = std::max(1, req_.num_warmup);
  p.calls = std::max(1, req_.num_perf_trials);
  // Adaptive trials (eval/adaptive_trials.h): num_perf_trials becomes the ceiling.
  const int floor = req_.min_perf_trials >= 0 ? req_.min_perf_trials : ctx_.min_perf_trials;
  if (floor > 0 && floor < p.calls) p.adaptive = StopRule{std::max(floor, 6), req_.perf_ci_target};
  p.rotation_sets = sets - FreshSets(sets);
  p.fresh_sets = FreshSets(sets);
  p.flush_mb = cuda ? 256 : 0;
  p.keep_mb = cuda ? kKeepMbCuda : kKeepMbCpu;
  p.keep_free = cuda ? kKeepFreeCuda : 0;
  p.seed = MixSeed(ctx_.secret ^ 0x5eed);
  p.null_calls = cuda;
  p.drain_wait_s = cuda ? kDrainWaitS : 0;
  timing_.fresh_first = p.calls;  // the first attempt's (first_call 0)
  p.bursts = false;               // BurstsWhereTheyCount
  p.await_quiet = [this] { AwaitQuiet(); };
  if (lent_) p.lend = [this] { return lent_->Free(); };
  p.verify = [this](int call, int set, const Frame& out) {
    if (out.header.value(field::kType, "") == kind::kError) {
      timing_.error_frame = out.header;
      return false;
    }
    Values o;
    Status ds = DecodeValues(out.header, field::kOutputs, out.payload, out.regions, &o);
    CountLent(o);
    Comparison c = ds.ok() ? CompareValues(ref_.pool[set].outputs, o, t32_, t16_) : Comparison{};
    if (ds.ok() && c.ok) return true;
    timing_.wrong_result = "timed call " + std::to_string(call) + " returned a wrong result (" +
                           (ds.ok() ? c.problem : ds.message()) + ")";
    return false;
  };
  return p;
}

// The decoy rule's second run, under the first attempt's lock (grad enabled; it is GPU work): Triton candidates with
// the kernel recorder whose timed calls returned right results.
Status CandidateRun::DetectGrad(bool recorded) {
  if (!recorded || req_.backend != "triton" || !req_.detect_decoy || !timing_.wrong_result.empty()) return Status::Ok();
  Frame d;
  const Clock::time_point d0 = Clock::now();
  Status s = w_->Send({{field::kType, kind::kDetect}});
  if (s.ok()) s = w_->RecvReply(dl_.at, &d);
  if (s.ok()) {
    timing_.grad_ran = d.header.value(field::kType, "") == kind::kDetected && !d.header.contains(field::kError);
    if (!timing_.grad_ran) timing_.grad_error = d.header.value(field::kError, d.header.dump().substr(0, 300));
  }
  md_["detect_grad_s"] = Seconds(Clock::now() - d0);
  timing_.lock_use.hold["detect_s"] = md_["detect_grad_s"];
  return s;
}

// The pipelined bursts only lower the floor a timeline span is raised to (RuntimeFromTimeline), so they run only
// where the span, judged without them, fell below that floor: with the lock taken again, after the kept fetches and
// the timeline (whose records they then do not enter). Elsewhere they would hold the lock for ~10 % of a candidate's
// timed part and change nothing.
Status CandidateRun::BurstsWhereTheyCount(const TimedCallsParams& p) {
  md_["timing_bursts_ran"] = false;
  if (!JudgeCandidateTiming(TimingInputs()).bursts_could_lower) return Status::Ok();
  TimedHold hold(ctx_.timing, TimingLock::DeviceOf(req_), &timing_.lock_use, w_.get());
  md_["timing_bursts_ran"] = true;
  return TimedBursts(w_.get(), p, dl_.at, timed_watch_.get(), &timing_.calls);
}

CandidateTimingInputs CandidateRun::TimingInputs() const {
  const auto& c = timing_.calls;
  CandidateTimingInputs ti;
  ti.timeline = timing_.timeline.get();
  ti.bracket_ms = c.bracket_ms;
  ti.event_ms = c.event_ms;
  ti.fresh_calls = static_cast<int>(c.fresh_ms.size());
  ti.null_ms = c.null_ms;
  ti.burst_ms = c.bursts.model_ms;
  ti.null_burst_ms = c.bursts.null_ms;
  ti.burst_k = c.bursts.k;
  ti.first_call = timing_.first_call;
  ti.fresh_first = timing_.fresh_first;
  ti.shared = timing_.shared.shared;
  ti.ref = ref_.device;
  ti.code = req_.kernel_code;
  ti.backend = req_.backend;
  ti.detect_decoy = req_.detect_decoy;
  ti.grad_ran = timing_.grad_ran;
  ti.grad_error = timing_.grad_error;
  ti.coverage_floor = req_.coverage_floor;
  return ti;
}

// ---- judge ----

// The rules over the timing evidence, in order: in-process evidence, deferred work (before wrong timed results: a
// deferring candidate's timed outputs are often read before its work is done), threads, wrong timed results,
// caching on the brackets.
End CandidateRun::JudgeTimingRules() {
  const WatchEvidence& ev = timed_watch_->evidence();
  md_["timing_new_thread_cpu_ms"] = NewThreadCpuMs(ev);
  SetAsidePrecisionFlags();
  if (End v = InProcessEvidenceRule(w_->evidence(), ev, " during timing")) {
    md_["hack_evidence"] = w_->evidence();
    return v;
  }
  md_["timing_thread_growth_calls"] = ev.Growth();
  md_["timing_cpu_inside_call_ms"] = Median(ev.cpu_inside_ms);
  md_["timing_cpu_between_calls_ms"] = Median(ev.cpu_between_ms);
  if (ev.unsettled_readings > 0) md_["timing_cpu_unsettled_readings"] = ev.unsettled_readings;
  if (End v = DeferredWorkRule(ev.cpu_inside_ms, ev.cpu_between_ms,
                               ref_.notes.value("reference_cpu_between_calls_ms", -1.0)))
    return v;
  if (End v = ThreadGrowthRule(ev, " during timing")) return v;
  if (End v = WrongTimedResultRule(timing_.wrong_result)) return v;
  const auto& c = timing_.calls;
  const std::vector<double> rotation = Unshared(c.bracket_ms, timing_.shared);  // shared calls are never judged
  const double repeat = RepeatSpeedRatio(c.fresh_ms, rotation);
  md_["timing_repeat_ratio"] = repeat;
  md_["timing_fresh_set_ms"] = c.fresh_ms;
  if (c.fresh_ms.size() >= 3 && repeat < 0.5) md_["timing_repeat_suspicious"] = true;
  return FreshSetCachingRule(c.fresh_ms, rotation);
}

End CandidateRun::Judge() {
  if (End v = JudgeTimingRules()) return v;
  const auto& c = timing_.calls;
  CandidateTimingVerdict tv;
  if (req_.device == "cuda")
    tv = JudgeCandidateTiming(TimingInputs());
  else  // CPU: the supervisor's brackets
    tv.stats = ComputeTimingStats(c.bracket_ms);
  for (auto& [k, x] : tv.metadata.items()) md_[k] = x;
  if (auto tr = TimingTraceIfAsked(timing_.timeline.get(), c.bracket_ms, c.self_ms, c.event_ms, c.null_ms);
      !tr.is_null())
    md_["timing_trace"] = tr;
  if (tv.hacked) return Verdict::Of(Outcome::kHacked, tv.detail);
  r_->kernel_timing = tv.stats;
  r_->reference_timing = ref_.timing;
  r_->kernel_runtime = r_->kernel_timing->median;
  r_->reference_runtime = ref_.timing->median;
  r_->speedup = r_->kernel_runtime > 0 ? r_->reference_runtime / r_->kernel_runtime : 0;
  md_["kernel_self_reported_median_ms"] = ComputeTimingStats(c.self_ms).median;
  if (!c.event_ms.empty()) md_["kernel_cuda_event_median_ms"] = ComputeTimingStats(c.event_ms).median;
  return std::nullopt;
}

// The device work of the candidate's worker by what it was for (eval/account.h), from its timeline.
void CandidateRun::AccountGpuWork() {
  if (!timing_.timeline || !timing_.timeline->ok) return;
  RequiredCalls req;
  for (const auto& t : ref_.trials)
    if (!t.skipped) req.default_trial.push_back(t.variant == "default");
  req.first_call = timing_.first_call;
  req.timed_calls = static_cast<int>(timing_.calls.bracket_ms.size());
  md_["gpu_work"] = GpuWorkOf(timing_.timeline->timeline, req).ToJson();
}

// The worker's end: asked to finish (it says bye and exits), its peak memory and output kept.
void CandidateRun::Finish() {
  AccountGpuWork();
  if (ctx_.timing->quiet()) md_["quiet_wait_s"] = quiet_wait_s_;
  if (lent_) md_["lent_buffers"] = {{"bytes", lent_->bytes()}, {"made", lent_->made()}, {"used", outputs_lent_.load()}};
  if (!w_) return;
  // How long other evaluations' timed holds kept this worker frozen (not counted against its deadlines).
  md_["frozen_s"] = Seconds(w_->FrozenFor());
  SamplePeak();
  if (worker_peak_ > 0) md_["host_memory"]["candidate_worker_peak_bytes"] = worker_peak_;
  const Clock::time_point finish0 = Clock::now();
  if (!w_->killed()) w_->Send({{field::kType, kind::kFinish}});
  WorkerExit e;
  w_->WaitExit(Clock::now() + std::chrono::seconds(3), &e);
  md_["finish_s"] = Seconds(Clock::now() - finish0);
  md_["stdout_tail"] = w_->Output();
  md_["stdout_bytes"] = w_->OutputBytes();
}

}  // namespace

void RunCandidate(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl, const RunContext& ctx,
                  const ProgressFn& progress, const std::atomic<bool>* cancel, EvalResult* r) {
  CandidateRun(req, ref, dl, ctx, progress, cancel, r).Run();
}

}  // namespace kgym
