// The correctness phase of a candidate's run (eval/candidate_run.h): the trials, their comparisons and the rules over
// them, as TimedAttempts (eval/timed_attempts.h) holds the timing loop.
#include "eval/candidate_run_impl.h"

namespace kgym::candidate_internal {

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
  facts_.correctness.correctness_trials = "(" + std::to_string(passed) + " / " + std::to_string(trials.size()) + ")";
  if (!max_diff.empty()) {
    facts_.correctness.max_difference = max_diff;
    facts_.correctness.avg_difference = avg_diff;
  }
  return JudgeCorrectness(outs, passed, problem, watch);
}

// The correctness rules, in order: in-process evidence, wrong values, threads seen from outside, constant output,
// decoy launches.
End CandidateRun::JudgeCorrectness(const TrialOutputs& outs, int passed, const std::string& problem,
                                   const ProcessWatch& watch) {
  const WatchEvidence& ev = watch.evidence();
  facts_.correctness.new_thread_cpu_ms = NewThreadCpuMs(ev);
  SetAsidePrecisionFlags();
  if (End v = InProcessEvidenceRule(w_->evidence(), ev, "")) {
    facts_.evidence.hack_evidence = w_->evidence();
    return v;
  }
  if (!w_->evidence().empty()) {  // only thread injection the outside watch showed idle: told, not judged
    facts_.correctness.idle_threads_evidence = w_->evidence();
    w_->evidence() = nlohmann::json::array();
  }
  if (!problem.empty()) {
    facts_.correctness.correctness_issue = problem;
    return Verdict::Of(Outcome::kIncorrect, problem);
  }
  facts_.correctness.thread_growth_calls = ev.Growth();
  if (End v = ThreadGrowthRule(ev, "")) return v;
  if (End v = ConstantOutputRule(outs.reference, outs.same_as_first)) return v;
  facts_.correctness.triton_kernels_defined = triton_kernels_;
  facts_.correctness.triton_launches = triton_launches_;
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
  nlohmann::json& precision = *(facts_.correctness.precision = j.ToJson());
  precision["policy"] = PrecisionPolicyName(precision_);
  return PrecisionDowngradeRule(j, precision_);
}

// Under compat, a changed backend flag (allow_tf32, ...) is judged like a downgrade inside a kernel: by the outputs'
// precision, which compat reports and does not judge. The flags seen stay in metadata.precision_flags_evidence.
void CandidateRun::SetAsidePrecisionFlags() {
  if (precision_ != PrecisionPolicy::kCompat || !w_->evidence().is_array()) return;
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& e : w_->evidence()) {
    if (e.is_array() && !e.empty() && e[0] == protocol::evidence::kPrecisionDowngrade)
      facts_.evidence.precision_flags_evidence = e;
    else
      kept.push_back(e);
  }
  w_->evidence() = kept;
}

}  // namespace kgym::candidate_internal
