// Builds the Evaluator that `kgym serve` and `kgym worker` run jobs with: the real one (src/eval) or, for
// load tests and benchmarks of the serving path only, the SimulatedEvaluator.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "eval/evaluator.h"

namespace kgym {

struct EvaluatorChoice {
  std::string kind = "real";  // real | simulated
  bool unsafe_no_sandbox = false;
  double sim_sleep_s = 0;
  std::string sim_journal;
  // Host memory (GB) the evaluations in flight may hold (real evaluator only): < 0 = 70 % of what the host or
  // cgroup has available at start, 0 = no limit. See sched/admitted_evaluator.h.
  double mem_budget_gb = -1;
  int spare_workers = kAutoSpares;    // EvaluatorOptions::spare_workers (real evaluator only)
  bool quiet_timing = false;          // EvaluatorOptions::quiet_timing (real evaluator only)
  int lent_buffers = 3;               // EvaluatorOptions::lent_buffers (real evaluator only)
  bool no_freeze_neighbours = false;  // !EvaluatorOptions::freeze_neighbours (real evaluator only)
  std::string precision = "strict";   // EvaluatorOptions::precision (real evaluator only)
  int min_perf_trials = 20;           // EvaluatorOptions::min_perf_trials (real evaluator only)
};

// `who` names the command in the one line that reports the memory budget.
Status MakeEvaluator(const EvaluatorChoice& choice, std::unique_ptr<Evaluator>* out, const std::string& who = "kgym");

}  // namespace kgym
