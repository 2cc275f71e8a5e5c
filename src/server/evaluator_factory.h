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
};

Status MakeEvaluator(const EvaluatorChoice& choice, std::unique_ptr<Evaluator>* out);

}  // namespace kgym
