// What `kgym sft` (grading) and `kgym train` (rollouts, validation) share: the gym built from the config's gym
// section, the policy's endpoint as a chat client, and one call that runs a set of trajectories into a fresh
// run folder through the agent (agent/agent_runner.h) and returns their records.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/agent_runner.h"
#include "agent/eval_backend.h"
#include "agent/task.h"
#include "core/status.h"

namespace kgym::train {

// kgym's in-process evaluator (sandboxed unless gym.unsafe_no_sandbox) or the KernelGYM-compatible gym.server.
Status MakeGym(const nlohmann::json& gym, std::unique_ptr<agent::EvalBackend>* out);

// The evaluation request template of the gym section (device, backend, timeout, size, reference backend; trial
// counts where the section has them).
EvalRequest EvalTemplate(const nlohmann::json& gym);

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
