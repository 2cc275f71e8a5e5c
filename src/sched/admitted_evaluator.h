// AdmittedEvaluator: an Evaluator that runs each request through MemoryAdmission (sched/admission.h) before the
// evaluator it wraps. Footprints are learned per task configuration (reference code, entry point, device, size,
// trial counts): the first evaluation of a configuration is "unknown" (admitted only while no other unknown one
// runs), later ones reserve what the largest earlier one measured. Once the first one's reference data exists (it
// moves on to "load"), an estimate from the cached reference stands in until that measurement (Estimate()). The
// measurement comes from the wrapped evaluator's result, typed (EvalResult::signals.host_memory: reference bytes,
// bytes of trial outputs, worker peaks; metadata "host_memory" says the same to the result's readers).
//
// Waiting for memory does not count against the request's timeout_s. A cancel while waiting returns outcome
// "invalid" / "cancelled" without running anything. The result's metadata gains "memory_admission"
// {waited_s, reserved_bytes, footprint_known, measured_bytes, budget_bytes}.
//
// Thread-safe like every Evaluator.
#pragma once

#include <memory>
#include <string>

#include "eval/evaluator.h"
#include "sched/admission.h"

namespace kgym {

class AdmittedEvaluator : public Evaluator {
 public:
  // `inner` does the work; its CachedReferences() is reported to admission as resident memory.
  AdmittedEvaluator(std::unique_ptr<Evaluator> inner, AdmissionOptions options);

  EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress = {},
                      const std::atomic<bool>* cancel = nullptr) override;
  std::vector<std::string> Devices() const override { return inner_->Devices(); }
  nlohmann::json Doctor() override { return inner_->Doctor(); }
  void CancelAll() override { inner_->CancelAll(); }
  // Admitted like an evaluation of its configuration (the first of one counts as the unknown one in flight); once
  // the reference data exists, an estimate from it admits the configuration's evaluations (as at "load").
  bool PrepareReference(const EvalRequest& req, const std::atomic<bool>* cancel = nullptr) override;
  void WantReferences(const std::string& owner, const std::set<std::string>& keys) override {
    inner_->WantReferences(owner, keys);
  }
  std::vector<std::pair<std::string, uint64_t>> CachedReferences() override { return inner_->CachedReferences(); }
  uint64_t CachedReferencePrivateBytes(const std::string& key) override {
    return inner_->CachedReferencePrivateBytes(key);
  }
  bool Admission(AdmissionStats* out) override;

  // The footprint key of a request: its reference configuration (ReferenceKey).
  static std::string FootprintKey(const EvalRequest& req);
  // The footprint an evaluation measured, from its result; known == false when the result carries none.
  static Footprint Measured(const EvalResult& r);
  // An estimate for `key` from the inner evaluator's cached reference data (known == false when it holds none).
  Footprint EstimateFromReference(const std::string& key);

 private:
  std::unique_ptr<Evaluator> inner_;
  MemoryAdmission admission_;
};

// The memory budget a `--mem-budget GB` flag asks for: < 0 = the default (70 % of what the host or cgroup has
// available now), 0 = off, else GB (10^9 bytes).
uint64_t MemoryBudgetFromFlag(double gb);

// Creates the real evaluator with `options` and, when budget_bytes > 0, wraps it in an AdmittedEvaluator (the
// reference cache is then limited to a quarter of the budget). Prints one line on stderr naming the budget.
Status CreateEvaluatorWithBudget(EvaluatorOptions options, uint64_t budget_bytes, const std::string& who,
                                 std::unique_ptr<Evaluator>* out);

}  // namespace kgym
