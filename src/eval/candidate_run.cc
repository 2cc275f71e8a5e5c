#include "eval/candidate_run.h"

#include "eval/candidate_run_impl.h"

namespace kgym {
namespace candidate_internal {

// ---- start ----

End CandidateRun::Start() {
  ExtensionCache::Entry ext;  // CUDA backend: this source's build cache (a failure to make it only costs time)
  if (req_.backend == "cuda") {
    Status cs = ctx_.extension_cache->Prepare(req_.kernel_code, &ext);
    if (!cs.ok()) {
      facts_.start.extension_cache_error = cs.message();
      ext = {};
    }
  }
  std::string how;
  Status s = ctx_.workers->StartCandidate(req_, ext.dir, dl_.at, &w_, &how);
  facts_.start.candidate_worker = how;
  if (w_) w_->SetCancel(cancel_ ? cancel_ : ctx_.cancel_all);
  if (!s.ok()) {
    // Nothing of the candidate has run yet (its code goes out with the job, after the hello): whatever stopped the
    // worker here is not its doing.
    if (w_ && w_->cancelled()) return WorkerFailureVerdict(w_.get(), s, "start", dl_, false);
    w_.reset();
    return Verdict::System("could not start the candidate worker: " + s.ToString());
  }
  const nlohmann::json& sandbox =
      *(facts_.start.sandbox = w_->hello().value(field::kProtections, nlohmann::json::object()));
  const bool sealed = ctx_.sandbox && !req_.unsafe_no_sandbox;
  if (!ext.dir.empty()) {  // "hit" only when the worker got the directory that held a build
    const bool given = sandbox.contains("extension_cache") || !sealed;
    facts_.start.extension_cache = !given ? "off" : ext.hit ? "hit" : "miss";
  }
  if (!sealed) return std::nullopt;
  std::string missing;
  for (const auto& x : MissingProtections(sandbox)) missing += (missing.empty() ? "" : ", ") + x;
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
  if (load_s != w_->notes().end() && load_s->is_number()) facts_.start.load_s = *load_s;
  if (f.header.value(field::kType, "") == kind::kError) return HarnessError(f.header);
  r_->compiled = true;
  const auto& kernels = f.header.find(field::kTritonKernels);
  if (kernels != f.header.end() && kernels->is_array())
    for (const auto& k : *kernels)
      if (k.is_string() && triton_kernels_.size() < 64) triton_kernels_.push_back(k.get<std::string>());
  return std::nullopt;
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
  facts_.timing.pool_s = Seconds(Clock::now() - pool0);
  const bool cuda = req_.device == "cuda";
  const bool recorded = cuda && w_->hello().value(field::kRecorder, "") == "on" && ref_.device.span_median_ms >= 0;
  const TimedCallsParams p = TimingParams(cuda);
  // Counted afresh: threads a lazy pool started in the first trials do not carry over.
  timed_watch_ = std::make_unique<ProcessWatch>(w_->harness_pid(), w_->hello_threads(), true, CpuClockFor(req_.device));
  // The worker readies its live inputs and flush buffer before the lock: only the timed part holds the device.
  const Clock::time_point prepare0 = Clock::now();
  Status s = StartTimedCalls(w_.get(), p, dl_.at);
  facts_.timing.prepare_s = Seconds(Clock::now() - prepare0);
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
  facts_.timing.timeline_fetch_s = a.timeline_fetch_s;
  if (timing_.timeline && s.ok()) s = BurstsWhereTheyCount(a.last);
  ReportCallCount(p);
  const nlohmann::json parts = a.times.ToJson();  // named: items() refers to it
  for (auto& [k, x] : parts.items()) timing_.lock_use.hold[k] = x;
  facts_.timing.lock = timing_.lock_use.ToJson();
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
  facts_.timing.kept_calls = kept_calls_;
  facts_.timing.kept_fetch_s = kept_fetch_s_;
  return s;
}

// How many timed calls ran and why they stopped (adaptive trials: the median's interval when they did).
void CandidateRun::ReportCallCount(const TimedCallsParams& p) {
  const auto& c = timing_.calls;
  facts_.timing.calls = c.bracket_ms.size();
  if (p.drain_wait_s > 0) {  // exclusive device time's second line (eval/contention.h)
    facts_.timing.attempts = timing_.attempts;
    facts_.timing.drained = c.drained;
    facts_.timing.drain_probes = c.drain_probes;
    facts_.timing.shared_calls = timing_.shared.count;
    if (!c.drained || !timing_.shared.clean) facts_.timing.contended = true;
  }
  if (!p.adaptive) return;
  facts_.timing.min_calls = p.adaptive->floor;
  facts_.timing.stopped = c.stopped_early ? "interval" : "ceiling";
  if (c.bracket_ci.known) {
    facts_.timing.median_ci_ms = std::vector<double>{c.bracket_ci.lo, c.bracket_ci.hi};
    facts_.timing.median_ci_rel = c.bracket_ci.RelativeHalfWidth();
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
  facts_.timing.detect_grad_s = Seconds(Clock::now() - d0);
  timing_.lock_use.hold["detect_s"] = *facts_.timing.detect_grad_s;
  return s;
}

// The pipelined bursts only lower the floor a timeline span is raised to (RuntimeFromTimeline), so they run only
// where the span, judged without them, fell below that floor: with the lock taken again, after the kept fetches and
// the timeline (whose records they then do not enter). Elsewhere they would hold the lock for ~10 % of a candidate's
// timed part and change nothing.
Status CandidateRun::BurstsWhereTheyCount(const TimedCallsParams& p) {
  facts_.timing.bursts_ran = false;
  if (!JudgeCandidateTiming(TimingInputs()).bursts_could_lower) return Status::Ok();
  TimedHold hold(ctx_.timing, TimingLock::DeviceOf(req_), &timing_.lock_use, w_.get());
  facts_.timing.bursts_ran = true;
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
  facts_.timing.new_thread_cpu_ms = NewThreadCpuMs(ev);
  SetAsidePrecisionFlags();
  if (End v = InProcessEvidenceRule(w_->evidence(), ev, " during timing")) {
    facts_.evidence.hack_evidence = w_->evidence();
    return v;
  }
  facts_.timing.thread_growth_calls = ev.Growth();
  facts_.timing.cpu_inside_call_ms = Median(ev.cpu_inside_ms);
  facts_.timing.cpu_between_calls_ms = Median(ev.cpu_between_ms);
  if (ev.unsettled_readings > 0) facts_.timing.cpu_unsettled_readings = ev.unsettled_readings;
  if (End v = DeferredWorkRule(ev.cpu_inside_ms, ev.cpu_between_ms,
                               ref_.notes.value("reference_cpu_between_calls_ms", -1.0)))
    return v;
  if (End v = ThreadGrowthRule(ev, " during timing")) return v;
  if (End v = WrongTimedResultRule(timing_.wrong_result)) return v;
  const auto& c = timing_.calls;
  const std::vector<double> rotation = Unshared(c.bracket_ms, timing_.shared);  // shared calls are never judged
  const double repeat = RepeatSpeedRatio(c.fresh_ms, rotation);
  facts_.timing.repeat_ratio = repeat;
  facts_.timing.fresh_set_ms = c.fresh_ms;
  if (c.fresh_ms.size() >= 3 && repeat < 0.5) facts_.timing.repeat_suspicious = true;
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
  facts_.timing.judgement = tv.metadata;
  if (auto tr = TimingTraceIfAsked(timing_.timeline.get(), c.bracket_ms, c.self_ms, c.event_ms, c.null_ms);
      !tr.is_null())
    facts_.timing.trace = tr;
  if (tv.hacked) return Verdict::Of(Outcome::kHacked, tv.detail);
  r_->kernel_timing = tv.stats;
  r_->reference_timing = ref_.timing;
  r_->kernel_runtime = r_->kernel_timing->median;
  r_->reference_runtime = ref_.timing->median;
  r_->speedup = r_->kernel_runtime > 0 ? r_->reference_runtime / r_->kernel_runtime : 0;
  facts_.timing.kernel_self_reported_median_ms = ComputeTimingStats(c.self_ms).median;
  if (!c.event_ms.empty()) facts_.timing.kernel_cuda_event_median_ms = ComputeTimingStats(c.event_ms).median;
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
  facts_.timing.gpu_work = GpuWorkOf(timing_.timeline->timeline, req).ToJson();
}

// The worker's end: asked to finish (it says bye and exits), its peak memory and output kept.
void CandidateRun::Finish() {
  AccountGpuWork();
  FinishFacts& f = facts_.finish;
  if (ctx_.timing->quiet()) f.quiet_wait_s = quiet_wait_s_;
  if (lent_)
    f.lent_buffers = nlohmann::json{{"bytes", lent_->bytes()}, {"made", lent_->made()}, {"used", outputs_lent_.load()}};
  if (!w_) return;
  // How long other evaluations' timed holds kept this worker frozen (not counted against its deadlines).
  f.frozen_s = Seconds(w_->FrozenFor());
  SamplePeak();
  if (worker_peak_ > 0) f.worker_peak_bytes = r_->signals.host_memory.candidate_worker_peak_bytes = worker_peak_;
  const Clock::time_point finish0 = Clock::now();
  if (!w_->killed()) w_->Send({{field::kType, kind::kFinish}});
  WorkerExit e;
  w_->WaitExit(Clock::now() + std::chrono::seconds(3), &e);
  f.finish_s = Seconds(Clock::now() - finish0);
  f.stdout_tail = w_->Output();
  f.stdout_bytes = w_->OutputBytes();
}

}  // namespace candidate_internal

void RunCandidate(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl, const RunContext& ctx,
                  const ProgressFn& progress, const std::atomic<bool>* cancel, EvalResult* r) {
  candidate_internal::CandidateRun(req, ref, dl, ctx, progress, cancel, r).Run();
}

}  // namespace kgym
