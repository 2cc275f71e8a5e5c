// What `kgym sft` (grading) and `kgym train` (rollouts, validation) share: their run parameters read from the
// configuration into RunSpecs (run/run_params.h defines which key sets which parameter; run/run_builder.h builds
// the loop from them), the task sets, and one call that runs a set of trajectories into a fresh run folder through
// the agent (agent/agent_runner.h) and returns their records.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/agent_runner.h"
#include "agent/eval_backend.h"
#include "agent/task.h"
#include "core/status.h"
#include "run/run_spec.h"

namespace kgym::train {

// `kgym train`'s runs: `train` for the rollouts (rollout.*, gym.*, reward.*; log-probs and token ids recorded),
// `val` for validation (rollout.val.* over the same; nothing recorded). The LLM endpoint is the policy's, set once
// the learner listens.
Status RlRunSpecs(const nlohmann::json& cfg, run::RunSpec* train, run::RunSpec* val);

// `kgym sft`'s grading: gym.* and eval.*, one greedy turn per task, the speedup reward without coverage.
Status GradeRunSpec(const nlohmann::json& cfg, run::RunSpec* out);

// Tasks from every path of `files` (tasks folders, .py, task JSONL), keeping those whose id equals or contains one
// of `only` (all when empty). Fails when nothing is left.
Status LoadTaskSet(const nlohmann::json& files, const nlohmann::json& only, std::vector<agent::Task>* out);

struct RolloutRun {
  std::vector<agent::Task> tasks;
  int samples = 1;
  agent::TurnLoopConfig loop;
  bool lockstep = true;
  int llm_concurrency = 256;
  int eval_concurrency = 8;
  std::string out_dir;  // replaced if it exists
};

// Runs every (task, sample) once and returns the records (agent/run_dir.h layout).
Status RunRollouts(const RolloutRun& run, agent::TurnLoopDeps deps, std::vector<nlohmann::json>* records);

}  // namespace kgym::train
