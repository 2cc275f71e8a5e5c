// TrainBatch: one training step's rollouts as the RL core's rows (rl/turn_rows.h). One row per turn that produced
// tokens, rows of a trajectory adjacent and in turn order; uid = the prompt's index among the step's prompts,
// traj = uid * n + sample. A row carries what the learner needs (the prompt ids the engine tokenized, the sampled
// ids, the engine's log-probs of them) and what the RL core needs (reward, coverage, correctness).
//
// Rows are kept out of the loss (loss_mask 0) when their evaluation reached no verdict or their trajectory ended
// with an error (Dr.Kernel masks a whole trajectory whose rollout failed). A turn whose LLM call failed produced
// no tokens and has no row. A turn with a response but no token ids means the engine does not return them: an
// error (re-tokenizing text would train on ids the engine never sampled).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::train {

struct TurnRow {
  int64_t uid = 0, traj = 0, turn = 0;
  double reward = 0;
  uint8_t loss_mask = 1;
  std::vector<int64_t> prompt_ids, response_ids;
  std::vector<double> rollout_logprobs;  // one per response token
  double coverage = 0;                   // rl PRS key (time_coverage or num_coverage)
  uint8_t correct = 0;                   // correctness && !decoy_kernel
  double speedup = 0;
  int64_t policy_version = -1;
  std::string task_id;
  int sample = 0;
};

struct TrainBatch {
  std::vector<TurnRow> rows;
  int64_t num_groups = 0;
  int trajectories = 0;
  int failed_trajectories = 0;  // status != done
};

// `records`: the step's trajectory records (agent/run_dir.h); `task_ids`: the step's prompts in uid order; `n`:
// samples per prompt; `coverage_key`: "time_coverage" | "num_coverage" (read from each turn's reward summary).
Status BuildTrainBatch(const std::vector<nlohmann::json>& records, const std::vector<std::string>& task_ids, int n,
                       const std::string& coverage_key, TrainBatch* out);

}  // namespace kgym::train
