#include "eval/reference_run.h"

#include <xxhash.h>

#include <algorithm>

#include "eval/process_watch.h"
#include "eval/timed_attempts.h"
#include "eval/timed_calls.h"
#include "eval/timing_stats.h"
#include "sandbox/process_stats.h"
#include "sandbox/protocol.h"

namespace kgym {

namespace kind = protocol::kind;
namespace field = protocol::field;
namespace note = protocol::note;

namespace {

// The inputs and outputs of one trial or pool set may not share a memfd: the candidate is handed the inputs' region.
bool SharesRegion(const Values& a, const Values& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.is_tensor && y.is_tensor && x.tensor.region && x.tensor.region == y.tensor.region &&
          x.tensor.region->fd() >= 0)
        return true;
  return false;
}

// Same arity, kinds, shapes and dtypes.
bool SameShapes(const Values& a, const Values& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].is_tensor != b[i].is_tensor) return false;
    if (a[i].is_tensor && (a[i].tensor.shape != b[i].tensor.shape || a[i].tensor.dtype != b[i].tensor.dtype))
      return false;
  }
  return true;
}

class ReferenceRun {
 public:
  ReferenceRun(const EvalRequest& req, const std::string& key, const Deadline& dl, const RunContext& ctx)
      : req_(req),
        dl_(dl),
        ctx_(ctx),
        ref_(std::make_shared<ReferenceData>()),
        base_(MixSeed(ctx.secret ^ XXH3_64bits(key.data(), key.size()))) {
    ref_->key = key;
  }

  std::shared_ptr<ReferenceData> Run() {
    nlohmann::json job = Job();
    Status s = ctx_.workers->StartReference(req_, dl_.at, &w_);
    if (!s.ok()) return Fail("system", "could not start the reference worker: " + s.ToString());
    w_->SetCancel(ctx_.cancel_all);
    // Quiet timing (eval/timing_lock.h): the job (load, trials, timing sets: one step) starts between timed holds.
    const std::string device = TimingLock::DeviceOf(req_);
    const double quiet_s = ctx_.timing->AwaitQuiet(device);
    s = w_->Send(job);
    if (!s.ok() || !Read("init")) return s.ok() ? ref_ : Failed(s, "init");
    s = DecodeValues(f_.header, field::kInit, f_.payload, f_.regions, &ref_->init);
    if (!s.ok()) return Fail("invalid", "reference init values: " + s.message());
    if (!ReadTrials(job[field::kTrials]) || !ReadPool()) return ref_;
    if (req_.measure_performance && ref_->pool.empty())
      return Fail("invalid", "the reference produced no timing inputs");
    // A reference backend that could not be applied fails the evaluation (not cached): timing eager PyTorch under
    // the name of torch.compile would hand out speedups against the wrong baseline.
    if (w_->notes().contains(note::kReferenceBackendError))
      return Fail("system", "the reference backend '" + req_.reference_backend +
                                "' could not be applied: " + w_->notes()[note::kReferenceBackendError].dump());
    if (ctx_.timing->quiet()) ref_->notes["reference_quiet_wait_s"] = quiet_s;
    if (req_.measure_performance && !Time()) return ref_;
    CheckSensitivity();
    Finish();
    return ref_;
  }

 private:
  // The job: code, the secret seeds of every trial and of the timing pool's sets (the worker sizes the pool by bytes).
  nlohmann::json Job() {
    ref_->init_seed = MixSeed(base_ + 1) % (1ull << 31);
    nlohmann::json trials = nlohmann::json::array();
    for (int i = 0; i < std::max(1, req_.num_correct_trials); ++i)
      trials.push_back({{field::kSeed, MixSeed(base_ + 100 + i) % (1ull << 31)}, {field::kVariant, "default"}});
    trials.push_back({{field::kSeed, MixSeed(base_ + 99) % (1ull << 31)}, {field::kVariant, "signed"}});
    trials.push_back({{field::kSeed, MixSeed(base_ + 98) % (1ull << 31)}, {field::kVariant, "sparse"}});
    nlohmann::json pool_seeds = nlohmann::json::array();
    const int pool = req_.measure_performance ? std::clamp(req_.num_perf_trials, 1, 16) + kFreshSets : 0;
    for (int j = 0; j < pool; ++j) pool_seeds.push_back(MixSeed(base_ + 1000 + j) % (1ull << 31));
    const bool cuda = req_.device == "cuda";
    return {{field::kType, kind::kJob},
            {field::kCode, req_.reference_code},
            {field::kClassName, req_.entry_point},
            {field::kDevice, cuda ? "cuda" : "cpu"},
            {field::kSize, req_.size},
            {field::kInitSeed, ref_->init_seed},
            {field::kTrainMode, req_.train_mode},
            {field::kTrials, trials},
            {field::kPoolSeeds, pool_seeds},
            {field::kPoolBudgetBytes, cuda ? (2ll << 30) : (256ll << 20)},
            {field::kReferenceBackend, req_.reference_backend}};
  }

  std::shared_ptr<ReferenceData> Fail(const std::string& kind, const std::string& detail) {
    ref_->error_kind = kind;
    ref_->error_detail = detail;
    if (w_) ref_->error_output = w_->Output();
    return ref_;
  }

  // An exchange that failed as a channel or a worker fails; a failure that was not the reference's is "system".
  std::shared_ptr<ReferenceData> Failed(const Status& s, const std::string& phase) {
    Verdict v = WorkerFailureVerdict(w_.get(), s, phase, dl_, true);
    if (v.error_code == "SYSTEM_ERROR") return Fail("system", v.detail);
    return Fail(s.code() == Status::Code::kTimeout ? "timeout" : "invalid", v.detail);
  }

  // The next reply into f_; false (with the reference failed) on a failure or an error frame.
  bool Read(const char* phase) {
    Status s = w_->RecvReply(dl_.at, &f_);
    if (!s.ok()) {
      Failed(s, phase);
      return false;
    }
    if (f_.header.value(field::kType, "") != kind::kError) return true;
    const std::string tb = f_.header.value(field::kTraceback, "");
    // Out of memory may be the host's state of the moment (other evaluations' memory): not kept, tried again.
    const bool memory = f_.header.value(field::kKind, "") == OutcomeName(Outcome::kResourceExhausted);
    Fail(memory ? "system" : "invalid", "the reference is broken (" + f_.header.value(field::kPhase, "") +
                                            "): " + f_.header.value(field::kDetail, ""));
    if (!tb.empty()) ref_->error_output = tb + "\n" + ref_->error_output;
    return false;
  }

  // Inputs and outputs of the frame in f_ into *t; false (with the reference failed) when they are unusable.
  bool DecodeSet(const char* what, ReferenceTrial* t) {
    Status s = DecodeValues(f_.header, field::kInputs, f_.payload, f_.regions, &t->inputs);
    if (s.ok()) s = DecodeValues(f_.header, field::kOutputs, f_.payload, f_.regions, &t->outputs);
    if (s.ok() && f_.header.contains(field::kOracle)) {
      s = DecodeValues(f_.header, field::kOracle, f_.payload, f_.regions, &t->oracle);
      if (s.ok()) s = DecodeValues(f_.header, field::kOracleIndex, f_.payload, f_.regions, &t->oracle_index);
    }
    if (!s.ok()) return Fail("invalid", std::string("reference ") + what + " values: " + s.message()), false;
    if (SharesRegion(t->inputs, t->outputs))
      return Fail("invalid", std::string("reference ") + what + " inputs and outputs share a shared-memory region"),
             false;
    return true;
  }

  bool ReadTrials(const nlohmann::json& trials) {
    for (const auto& spec : trials) {
      if (!Read("correctness")) return false;
      ReferenceTrial t;
      t.variant = spec[field::kVariant];
      t.skipped = f_.header.value(field::kSkipped, false);
      if (!DecodeSet("trial", &t)) return false;
      ref_->trials.push_back(std::move(t));
    }
    return true;
  }

  bool ReadPool() {  // pool sets, then "ready"
    while (true) {
      if (!Read("timing pool")) return false;
      if (f_.header.value(field::kType, "") != kind::kPoolSet) return true;
      ReferenceTrial t;
      t.variant = "default";
      if (!DecodeSet("pool", &t)) return false;
      ref_->pool.push_back(std::move(t));
    }
  }

  bool Time();
  void RecordTimeline(const TimedCallsResult& timed, const WorkerTimeline& tl, int first_call,
                      const SharedCalls& shared);
  void CheckSensitivity();
  void Finish();

  const EvalRequest& req_;
  const Deadline dl_;
  const RunContext& ctx_;
  std::shared_ptr<ReferenceData> ref_;
  const uint64_t base_;
  std::unique_ptr<WorkerSession> w_;
  Frame f_;
};

// The reference's timed calls, under the device's timing lock; on a GPU with the recorder, its kernel timeline. Timed
// again where an attempt shared the device (eval/contention.h), as a candidate is: its time is every candidate's
// denominator.
bool ReferenceRun::Time() {
  const bool cuda = req_.device == "cuda";
  const bool recorded = cuda && w_->hello().value(field::kRecorder, "") == "on";
  const int sets = static_cast<int>(ref_->pool.size());
  const std::string device = TimingLock::DeviceOf(req_);
  TimedCallsParams p;
  p.warmup = std::max(1, req_.num_warmup);
  p.calls = std::max(1, req_.num_perf_trials);
  p.rotation_sets = sets - FreshSets(sets);
  p.flush_mb = cuda ? 256 : 0;
  p.seed = base_ + 7;
  p.null_calls = cuda;
  p.drain_wait_s = cuda ? kDrainWaitS : 0;
  // No verify: the reference's outputs are its own, so none of its timed calls is fetched.
  ProcessWatch watch(w_->harness_pid(), {}, /*count_threads=*/false, CpuClockFor(req_.device));
  LockUse lock_use;
  TimedAttempts a(w_.get(), ctx_.timing, device, dl_.at, &watch, &lock_use);
  Status s = StartTimedCalls(w_.get(), p, dl_.at);  // before the lock: the worker readies its live inputs
  if (s.ok()) s = a.Run(p, recorded);
  const TimedCallsResult& timed = a.calls;
  const SharedCalls& shared = a.shared;
  lock_use.hold = a.times.ToJson();
  ref_->notes["reference_timing_lock"] = lock_use.ToJson();
  if (s.code() == Status::Code::kInvalidArgument) {
    auto h = nlohmann::json::parse(s.message(), nullptr, false);
    if (h.is_object()) {  // its error frame (else the channel broke: Failed says whose doing that was)
      Fail("invalid", "the reference failed while being timed: " + h.value(field::kDetail, s.message()));
      return false;
    }
  }
  if (!s.ok()) return Failed(s, "reference timing"), false;
  auto& notes = ref_->notes;
  if (cuda) {
    notes["reference_timing_attempts"] = a.attempts;
    notes["reference_timing_drained"] = timed.drained;
    notes["reference_timing_shared_calls"] = shared.count;
  }
  ref_->timing = ComputeTimingStats(Unshared(timed.bracket_ms, shared));
  notes["reference_supervisor_median_ms"] = ref_->timing->median;
  if (!timed.bursts.null_ms.empty()) {
    ref_->device.null_burst_ms = Median(timed.bursts.null_ms);
    notes["reference_burst_per_call_ms"] =
        BurstPerCallMs(timed.bursts.model_ms, timed.bursts.null_ms, timed.bursts.k, 0);
  }
  if (recorded) {
    WorkerTimeline none;
    none.problem = "the reference's timeline could not be read";
    RecordTimeline(timed, a.timeline ? *a.timeline : none, a.last.first_call, shared);
  }
  notes["reference_self_reported_median_ms"] = ComputeTimingStats(timed.self_ms).median;
  notes["reference_cpu_inside_call_ms"] = Median(watch.evidence().cpu_inside_ms);
  notes["reference_cpu_between_calls_ms"] = Median(watch.evidence().cpu_between_ms);
  if (!timed.event_ms.empty()) notes["reference_cuda_event_median_ms"] = ComputeTimingStats(timed.event_ms).median;
  return true;
}

// The reference is timed by its kernels where its timeline is usable; its brackets then give the harness's overhead.
// `tl`: the stream after the last attempt, whose calls start at `first_call`; `shared` of them left out.
void ReferenceRun::RecordTimeline(const TimedCallsResult& timed, const WorkerTimeline& tl, int first_call,
                                  const SharedCalls& shared) {
  auto& notes = ref_->notes;
  std::string problem = tl.ok ? "" : tl.problem.empty() ? "the reference's timeline could not be read" : tl.problem;
  TimedSpans sp;
  const int n = static_cast<int>(timed.bracket_ms.size());
  if (problem.empty()) {
    sp = SpansOfTimedCalls(tl.timeline, n, first_call);
    if (sp.missing > 0 || sp.span_ms.empty())
      problem = "the reference's timeline lacks timed calls";
    else if (sp.empty > 0)  // a stream whose operations lost their call tags reads as calls taking no time
      problem = "the reference's timeline shows no device work in " + std::to_string(sp.empty) + " of " +
                std::to_string(n) + " timed calls";
  }
  if (problem.empty()) {
    const std::vector<double> spans = Unshared(sp.span_ms, shared), brackets = Unshared(timed.bracket_ms, shared);
    ref_->timing = ComputeTimingStats(spans);
    ref_->device.span_median_ms = ref_->timing->median;
    ref_->device.gap_ms = std::max(0.0, Median(brackets) - ref_->device.span_median_ms);
    ref_->device.kernel_names = sp.kernel_names;
    if (!timed.null_ms.empty()) {
      ref_->device.null_ms = Median(timed.null_ms);
      notes["reference_null_call_median_ms"] = ref_->device.null_ms;
      notes["reference_host_ms"] = std::max(0.0, ref_->device.gap_ms - ref_->device.null_ms);
    }
    // All of the reference worker's device work (its trials, oracle and timed calls), paid once per configuration.
    notes["reference_gpu_s"] = static_cast<double>(tl.timeline.BusyNs()) / 1e9;
    notes["reference_timeline_busy_median_ms"] = Median(Unshared(sp.busy_ms, shared));
    notes["reference_timeline_kernel_sum_median_ms"] = Median(Unshared(sp.kernel_ms, shared));
    notes["reference_harness_overhead_ms"] = ref_->device.gap_ms;
    notes["reference_kernels"] = sp.kernel_names.size();
    nlohmann::json names = nlohmann::json::array();  // which kernels: shows e.g. what torch.compile generated
    for (const std::string& k : sp.kernel_names) {
      if (names.size() == 16) break;
      names.push_back(k.size() > 160 ? k.substr(0, 160) + "..." : k);
    }
    notes["reference_kernel_names"] = std::move(names);
    if (auto tr = TimingTraceIfAsked(&tl, timed.bracket_ms, timed.self_ms, timed.event_ms, timed.null_ms);
        !tr.is_null())
      notes["reference_timing_trace"] = tr;
  } else {
    notes["reference_timeline_problem"] = problem;
  }
  double bytes = 0;
  for (const auto* vals : {&ref_->pool[0].inputs, &ref_->pool[0].outputs})
    for (const auto& v : *vals)
      if (v.is_tensor) bytes += static_cast<double>(v.tensor.nbytes);
  ref_->device.bytes_moved = bytes;
}

// Family I of the hack catalogue: a problem whose output does not depend on its inputs at the task's sizes (L2/9:
// rand inputs, a linear layer, minus 2, ReLU: zero everywhere; a mean over many elements) passes a constant or
// memoised candidate on every draw of get_inputs. When every default trial's outputs match the first one's within the
// task's tolerance, the note reference_default_insensitive says so, and:
//  - where a wider trial (signed, else sparse) has outputs that differ, a constant fails that trial, and the trial
//    takes the place of the last fresh timing set (after the reference's own timing, which never uses fresh sets):
//    that set's timed call is verified like every fresh one, so outputs kept from earlier inputs are wrong there;
//  - where none does, the note reference_insensitive says the task cannot tell a constant output from a computed one
//    (every evaluation of the configuration carries the notes; a correct one says so in its detail).
void ReferenceRun::CheckSensitivity() {
  const Tolerance t32{req_.atol, req_.rtol}, t16{req_.atol_half, req_.rtol_half};
  const std::vector<ReferenceTrial>& trials = ref_->trials;
  const ReferenceTrial* first = nullptr;
  int same = 0;
  for (const auto& t : trials) {
    if (t.variant != "default" || t.skipped) continue;
    if (!first) {
      first = &t;
      continue;
    }
    if (!CompareValues(first->outputs, t.outputs, t32, t16).ok) return;  // the outputs depend on the inputs
    ++same;
  }
  if (same == 0) return;
  ref_->notes["reference_default_insensitive"] = true;
  const ReferenceTrial* wider = nullptr;
  for (const auto& t : trials)
    if (t.variant != "default" && !t.skipped && !CompareValues(first->outputs, t.outputs, t32, t16).ok) {
      wider = &t;
      break;
    }
  if (!wider) {
    ref_->notes["reference_insensitive"] = true;
    return;
  }
  if (FreshSets(static_cast<int>(ref_->pool.size())) == 0) return;
  ReferenceTrial& last = ref_->pool.back();
  if (!SameShapes(wider->inputs, last.inputs) || !SameShapes(wider->outputs, last.outputs)) return;
  last = *wider;
  ref_->notes["reference_fresh_set_variant"] = wider->variant;
}

void ReferenceRun::Finish() {
  for (auto& [k, v] : w_->notes().items()) ref_->notes[k] = v;
  ref_->notes["reference_frozen_s"] = std::chrono::duration<double>(w_->FrozenFor()).count();
  const auto& bw = ref_->notes.find(note::kDeviceCopyBandwidthGbps);
  if (bw != ref_->notes.end() && bw->is_number()) ref_->device.bandwidth_gbps = bw->get<double>();
  ref_->notes["reference_worker_peak_bytes"] = ProcessPeakPrivateBytes(w_->harness_pid());  // for memory admission
  w_->Send({{field::kType, kind::kFinish}});
  WorkerExit e;
  w_->WaitExit(Clock::now() + std::chrono::seconds(5), &e);
}

}  // namespace

std::shared_ptr<ReferenceData> RunReference(const EvalRequest& req, const std::string& key, const Deadline& dl,
                                            const RunContext& ctx) {
  return ReferenceRun(req, key, dl, ctx).Run();
}

}  // namespace kgym
