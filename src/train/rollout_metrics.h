// The numbers of a set of rollouts (a training step's or a validation run's), from their trajectory records:
// Dr.Kernel's grading (src/grade: Fast@p of the final turn over all samples, best-of-history, correctness,
// hacking ratio), token counts and the LLM/evaluation time, and, when known solutions are given, which of them
// the rollouts reproduced (the first turn's code compared with each <dir>/<task_id>_<kind>.py, whitespace at the
// ends ignored): `<prefix>/solution/<kind>` is the share of trajectories whose first turn is that solution.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::train {

// task id -> (kind, code) of every <dir>/<task_id>_<kind>.py.
using KnownSolutions = std::map<std::string, std::vector<std::pair<std::string, std::string>>>;

Status LoadKnownSolutions(const std::string& dir, const std::vector<std::string>& task_ids, KnownSolutions* out);

// Flat metrics named <prefix>/...: correct_rate, fast@p (final turn, over all samples), best_fast@p,
// hacking_rate, mean_reward, speedup_mean (correct turns), coverage_mean (correct turns), response_tokens_mean,
// llm_s and eval_s (sums over turns), turns, abnormal_turns, and solution/<kind> when `known` is given.
nlohmann::json RolloutMetrics(const std::vector<nlohmann::json>& records, const KnownSolutions* known,
                              const std::string& prefix);

}  // namespace kgym::train
