// EvolveOptions (skills/evolve.h), built in one place from a run's RunSpec and the round's own settings, for both
// callers: `kgym skills evolve` (its flags bind an EvolveRound) and `kgym train` (a round after each step when
// rollout.skills is set, with the training's token budget).
#pragma once

#include <cstdint>
#include <string>

#include "run/run_spec.h"
#include "skills/evolve.h"

namespace kgym::run {

// What a round needs beyond the RunSpec. The defaults are `kgym skills evolve`'s (and daVinci's).
struct EvolveRound {
  std::string run_dir;
  std::string library_dir;  // "" = the spec's skill library (--skills / rollout.skills)
  std::string tasks_path;   // "" = the "tasks" of RUN_DIR/config.json
  int64_t step = -1;        // the snapshot to extend (newest <= step; -1 newest)
  uint64_t second_task_seed = 0;
  bool seed_calls = true;  // the summary and verification calls carry the spec's --seed
  double summary_temperature = 1.0;
  int summary_max_tokens = 2048;
  int verify_max_tokens = 8192;  // the greedy turn-1 budget
  skills::TriggerOptions trigger;
  skills::VerifyOptions verify;
  skills::FlushOptions flush;
  double usage_success_speedup = 1.0;
  bool force = false;
};

// From the spec: the verification evaluations' request (gym), summaries per task (--skill-summaries), LLM calls and
// evaluations in flight (--eval-concurrency), the library and the calls' seed; the rest from `round`.
skills::EvolveOptions BuildEvolveOptions(const RunSpec& spec, const EvolveRound& round);

}  // namespace kgym::run
