#include "run/evolve_round.h"

namespace kgym::run {

skills::EvolveOptions BuildEvolveOptions(const RunSpec& spec, const EvolveRound& round) {
  skills::EvolveOptions o;
  o.run_dir = round.run_dir;
  o.library_dir = round.library_dir.empty() ? spec.skills.library : round.library_dir;
  o.tasks_path = round.tasks_path;
  o.step = round.step;
  o.seed = round.second_task_seed;
  o.summaries_per_task = spec.skills.summaries;
  o.summary_sampling.temperature = round.summary_temperature;
  o.summary_sampling.max_tokens = round.summary_max_tokens;
  o.verify_sampling.max_tokens = round.verify_max_tokens;
  if (round.seed_calls) {
    o.summary_sampling.seed = spec.sampling.seed;
    o.verify_sampling.seed = spec.sampling.seed;
  }
  o.trigger = round.trigger;
  o.verify = round.verify;
  o.flush = round.flush;
  o.usage_success_speedup = round.usage_success_speedup;
  o.concurrency = spec.gym.eval_concurrency;
  o.force = round.force;
  o.eval = spec.gym.request;
  return o;
}

}  // namespace kgym::run
