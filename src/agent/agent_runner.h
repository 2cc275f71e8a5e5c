// RunAgent: runs every (task, sample) trajectory of a dataset that the run directory does not hold yet, with
// `concurrency` trajectories in flight; LLM calls and evaluations of different trajectories overlap, bounded
// by `llm_concurrency` and `eval_concurrency`. Each trajectory's record is appended to the run directory the
// moment it ends, so an interrupted run resumes where it stopped (finished trajectories are never redone;
// records with an llm_error/eval_error status are redone when `retry_failed`). With `lockstep`, every trajectory
// to run gets its own thread (concurrency is ignored) and they alternate generation and evaluation together.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/chat_client.h"
#include "agent/eval_backend.h"
#include "agent/prompt.h"
#include "agent/task.h"
#include "agent/turn_loop.h"
#include "core/status.h"

namespace kgym::agent {

struct AgentRunOptions {
  std::string out_dir;
  int samples = 8;
  int concurrency = 16;
  int llm_concurrency = 8;
  int eval_concurrency = 4;
  int limit_trajectories = 0;  // stop after starting this many (0 = all); for smoke runs and tests
  bool retry_failed = false;
  bool progress = true;
  bool lockstep = false;  // every trajectory at once, generation and evaluation phases in lockstep (phase_gate.h)
  TurnLoopConfig loop;
  nlohmann::json config_extra = nlohmann::json::object();  // recorded in config.json
};

struct AgentRunSummary {
  int total = 0, skipped = 0, ran = 0, failed = 0;
};

Status RunAgent(const std::vector<Task>& tasks, const AgentRunOptions& opt, TurnLoopDeps deps,
                AgentRunSummary* summary);

}  // namespace kgym::agent
