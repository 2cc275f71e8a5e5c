#include "server/evaluator_factory.h"

#include <unistd.h>

#include "eval/simulated_evaluator.h"
#include "sched/admitted_evaluator.h"

namespace kgym {

Status MakeEvaluator(const EvaluatorChoice& choice, std::unique_ptr<Evaluator>* out, const std::string& who) {
  if (choice.kind == "simulated") {
    SimulatedEvaluatorOptions o;
    o.default_sleep_s = choice.sim_sleep_s;
    o.journal_path = choice.sim_journal;
    o.devices = {"cpu"};
    for (int i = 0; i < 16; ++i)
      if (access(("/dev/nvidia" + std::to_string(i)).c_str(), F_OK) == 0)
        o.devices.push_back("cuda:" + std::to_string(i));
    *out = std::make_unique<SimulatedEvaluator>(o);
    return Status::Ok();
  }
  if (choice.kind != "real") return Status::InvalidArgument("--evaluator must be real or simulated");
  EvaluatorOptions o;
  o.sandbox = !choice.unsafe_no_sandbox;
  o.spare_workers = choice.spare_workers;
  o.quiet_timing = choice.quiet_timing;
  o.freeze_neighbours = !choice.no_freeze_neighbours;
  o.precision = choice.precision;
  o.min_perf_trials = choice.min_perf_trials;
  o.lent_buffers = choice.lent_buffers;
  return CreateEvaluatorWithBudget(o, MemoryBudgetFromFlag(choice.mem_budget_gb), who, out);
}

}  // namespace kgym
