// TrialChecks: the comparisons of a candidate's correctness trials, each on a thread of its own while the next
// trial's exchange goes on (a level-1 problem's 2 GB output takes ~0.3 s to compare; meanwhile the worker unpacks the
// next inputs and calls the model). One comparison at a time (BackgroundCheck); read back in trial order.
//
// Contract:
// - Submit(trial): compares trial.got with its reference outputs (CompareValues), measures a passing trial's error and
//   the reference's against the trial's fp64 oracle where it has one (eval/precision.h) and, for every trial after the
//   first, whether its outputs are bit-identical to the first trial's (same_as_first, for the constant-output rule).
//   Then every trial's outputs but the first's are dropped, so a lent buffer (eval/lent_buffers.h) they were read
//   from is free for a later reply as soon as its comparison has finished.
// - Going(): false once a comparison has failed (the verdict is decided; more trials tell nothing new).
// - AllPassed(): waits for the outstanding comparison; true when every one so far passed.
// - Finish(): waits for all; the trials compared, in order, none after the first that failed.
// Not thread-safe: one caller thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/background_check.h"
#include "eval/precision.h"
#include "eval/reference.h"
#include "eval/tensor.h"

namespace kgym {

class TrialChecks {
 public:
  struct Trial {
    const ReferenceTrial* ref = nullptr;
    Values got;  // the candidate's outputs (dropped after the comparison, but for the first trial)
    Comparison c;
    std::vector<OutputPrecision> precision;  // against the oracle (empty: the trial has none, or it failed)
    bool same_as_first = true;
    double exchange_s = 0, compare_s = 0;
    nlohmann::json worker_s;
    int64_t triton_launches = -1;
  };

  TrialChecks(const Tolerance& fp32, const Tolerance& half) : t32_(fp32), t16_(half) {}

  bool Going() { return !check_.Failed(); }
  void Submit(std::unique_ptr<Trial> t);
  bool AllPassed() { return check_.Wait(); }
  std::vector<std::unique_ptr<Trial>>& Finish();

 private:
  const Tolerance t32_, t16_;
  std::vector<std::unique_ptr<Trial>> trials_;  // declared before the check: its thread ends before they go
  BackgroundCheck check_;
};

}  // namespace kgym
