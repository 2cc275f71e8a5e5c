#include "sched/admitted_evaluator.h"

#include <algorithm>
#include <cstdio>

#include "eval/account.h"
#include "sched/host_memory.h"

namespace kgym {

namespace {

AdmissionOptions WithResident(AdmissionOptions o, Evaluator* inner) {
  if (!o.resident) o.resident = [inner] { return inner->CachedReferences(); };
  return o;
}

}  // namespace

AdmittedEvaluator::AdmittedEvaluator(std::unique_ptr<Evaluator> inner, AdmissionOptions options)
    : inner_(std::move(inner)), admission_(WithResident(std::move(options), inner_.get())) {}

std::string AdmittedEvaluator::FootprintKey(const EvalRequest& req) { return ReferenceKey(req); }

Footprint AdmittedEvaluator::Measured(const EvalResult& r) {
  Footprint f;
  const HostMemoryUse& hm = r.signals.host_memory;  // typed by the evaluator (core/evaluation.h EvalSignals)
  if (!hm.known) return f;
  f.known = true;
  f.shared_key = r.signals.reference_cache_key;
  f.shared_bytes = hm.reference_bytes;
  // The candidate's outputs of every trial stay here until the verdict; its worker (or, before it, the reference
  // worker doing the same computation) holds its own copies. Without a worker measurement, assume the workers held
  // as much as the reference data itself.
  uint64_t worker = std::max(hm.candidate_worker_peak_bytes, hm.reference_worker_peak_bytes);
  f.private_bytes = hm.trial_output_bytes + (worker > 0 ? worker : f.shared_bytes);
  return f;
}

Footprint AdmittedEvaluator::EstimateFromReference(const std::string& key) {
  Footprint f;
  for (const auto& [k, bytes] : inner_->CachedReferences()) {
    if (k != key) continue;
    // The inner evaluator's bound (the outputs it holds at once, a worker as large as the reference's), else what
    // Measured() assumes without a worker measurement, with the trial outputs at their bound (they are part of the
    // reference data): outputs held here <= the reference data, each worker about the reference data's size.
    f.known = true;
    f.shared_key = key;
    f.shared_bytes = bytes;
    const uint64_t bound = inner_->CachedReferencePrivateBytes(key);
    f.private_bytes = bound > 0 ? bound : 2 * bytes;
  }
  return f;
}

EvalResult AdmittedEvaluator::Evaluate(const EvalRequest& req, const ProgressFn& progress,
                                       const std::atomic<bool>* cancel) {
  std::string key = FootprintKey(req);
  auto ticket = admission_.AdmitConfig(key, req.task_id.empty() ? "an evaluation" : req.task_id, cancel, [&] {
    if (progress) progress("memory");  // waiting for memory: visible as a phase of its own
  });
  nlohmann::json info = {{"budget_bytes", admission_.options().budget_bytes}};
  if (!ticket) {
    info["footprint_known"] = admission_.Known(key).known;
    EvalResult r;
    r.task_id = req.task_id;
    r.outcome = Outcome::kInvalid;
    r.outcome_detail = r.error_message = "cancelled";
    r.metadata["memory_admission"] = info;
    return r;
  }
  // The first of a configuration: once its reference data exists (the evaluator moves on to "load"), an estimate
  // from it lets the evaluations queued behind this one in, instead of after its whole candidate phase.
  bool estimated = ticket->footprint_known();
  const ProgressFn on_phase = [&](const std::string& phase) {
    if (!estimated && phase == "load") {
      estimated = true;
      admission_.Estimate(key, EstimateFromReference(key));
    }
    if (progress) progress(phase);
  };
  EvalResult r = inner_->Evaluate(req, on_phase, cancel);
  Footprint m = Measured(r);
  admission_.Learn(key, m);  // before the ticket goes, so whoever it lets in sees the measurement
  info["footprint_known"] = ticket->footprint_known();
  info["waited_s"] = ticket->waited_s();
  info["reserved_bytes"] = ticket->reserved_bytes();
  info["oversized"] = ticket->oversized();
  if (m.known) info["measured_bytes"] = m.Total();
  r.metadata["memory_admission"] = info;
  AddToAccount(&r.metadata, "memory", ticket->waited_s());
  return r;
}

bool AdmittedEvaluator::PrepareReference(const EvalRequest& req, const std::atomic<bool>* cancel) {
  const std::string key = FootprintKey(req);
  auto ticket = admission_.AdmitReference(key, cancel);
  if (!ticket) return false;
  const bool made = inner_->PrepareReference(req, cancel);
  if (made && !ticket->footprint_known()) admission_.Estimate(key, EstimateFromReference(key));
  return made;
}

bool AdmittedEvaluator::Admission(AdmissionStats* out) {
  *out = admission_.Stats();
  return true;
}

uint64_t MemoryBudgetFromFlag(double gb) {
  if (gb < 0) return DefaultMemoryBudget(0.7);
  return static_cast<uint64_t>(gb * 1e9);
}

Status CreateEvaluatorWithBudget(EvaluatorOptions options, uint64_t budget_bytes, const std::string& who,
                                 std::unique_ptr<Evaluator>* out) {
  // KernelBench-size references reach ~10 GB each (level 2's conv problems, level 1): a cache smaller than a few of
  // them drops the reference of a task whose evaluations are still queued, and they compute it again. Admission
  // counts the cached bytes as held, so a quarter of the budget is safe.
  if (budget_bytes > 0 && options.reference_cache_bytes == 0) options.reference_cache_bytes = budget_bytes / 4;
  std::unique_ptr<Evaluator> ev;
  Status s = Evaluator::Create(options, &ev);
  if (!s.ok()) return s;
  if (budget_bytes == 0) {
    *out = std::move(ev);
    return Status::Ok();
  }
  std::fprintf(stderr,
               "%s: memory budget %s for evaluations in flight (reference cache up to %s; --mem-budget 0 "
               "turns admission off)\n",
               who.c_str(), FormatGB(budget_bytes).c_str(), FormatGB(options.reference_cache_bytes).c_str());
  AdmissionOptions ao;
  ao.budget_bytes = budget_bytes;
  ao.max_unknown_in_flight = kServeUnknownInFlight;
  *out = std::make_unique<AdmittedEvaluator>(std::move(ev), ao);
  return Status::Ok();
}

}  // namespace kgym
