// The multi-turn loop of one trajectory (research/drkernel.md §4.4-4.5): first-turn prompt, generation,
// kernel extraction, evaluation, reward, refinement message with the rendered feedback, up to `turns` turns;
// with iterations > 1, sequential test-time scaling: after each iteration the context is rebuilt from the
// initial prompt plus `keep_turns` stored turns (the best contiguous window by reward, or the last ones) and
// `turns - keep_turns` new turns are generated, for turns + (iterations-1)(turns-keep_turns) turns in all.
//
// A turn whose LLM call fails after all retries, or whose evaluation reaches no verdict, is recorded as
// abnormal (no metrics) and ends the trajectory with status "llm_error" / "eval_error".
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <string>
#include <vector>

#include "agent/chat_client.h"
#include "agent/eval_backend.h"
#include "agent/feedback.h"
#include "agent/phase_gate.h"
#include "agent/prompt.h"
#include "agent/task.h"
#include "core/evaluation.h"

namespace kgym::agent {

// Returns the reward summary for an evaluation result: at least {"reward": number}; merged into the feedback.
using RewardFn = std::function<nlohmann::json(const nlohmann::json& result)>;

struct TurnLoopConfig {
  int turns = 3;
  int iterations = 1;
  int keep_turns = 4;
  std::string keep_method = "best";         // best | last
  std::string selection_metric = "reward";  // reward | speedup
  bool use_dataset_prompt = true;           // send the task's stored prompt when it has one
  double rerun_above_speedup = 3.0;         // re-evaluate once when speedup exceeds this (0 = never)
  int seed = -1;                            // per-request seed = seed + 1000*sample + turn when >= 0
  SamplingParams sampling;
  EvalRequest eval;  // template: trials, device, timeout, backend
  FeedbackOptions feedback;
  std::string run_id = "run";
  std::string model;
};

// Live counters shown by the progress bar.
struct LoopCounters {
  std::atomic<int> turns_done{0};
  std::atomic<int> llm_in_flight{0};
  std::atomic<int> eval_in_flight{0};
};

struct TurnLoopDeps {
  const ChatClient* llm = nullptr;
  EvalBackend* eval = nullptr;
  RewardFn reward;
  const PromptTemplates* templates = nullptr;
  FirstTurnRewriter first_turn_rewriter;           // optional (skills)
  std::counting_semaphore<>* llm_slots = nullptr;  // optional concurrency bounds
  std::counting_semaphore<>* eval_slots = nullptr;
  LoopCounters* counters = nullptr;
  TurnPhaseGate* gate = nullptr;  // optional lockstep with the other trajectories (RunTrajectory leaves it at the end)
};

// Total number of turns a trajectory generates under `cfg`.
int TotalTurns(const TurnLoopConfig& cfg);

// Indices (into `metrics`, chronological) of the turns kept in the context for the next iteration: "last" =
// the last `keep` turns, "best" = the contiguous window of `keep` turns with the largest sum (earliest on ties).
std::vector<size_t> SelectContextTurns(const std::vector<double>& metrics, size_t keep, const std::string& method);

// The first user message for `task` (stored prompt or template, then the rewriter called with `sample` and
// `note`; a null note is allowed).
std::string FirstPrompt(const Task& task, const TurnLoopConfig& cfg, const TurnLoopDeps& deps, int sample = -1,
                        nlohmann::json* note = nullptr);

// Whether `code` passes Dr.Kernel's client preflight; `why` names what is missing.
bool Preflight(const std::string& reference_code, const std::string& code, const std::string& entry_point,
               std::string* why);

// Runs one whole trajectory and returns its record (see RunDir for the layout).
nlohmann::json RunTrajectory(const Task& task, int sample, const TurnLoopConfig& cfg, const TurnLoopDeps& deps);

// The evaluation task id of one turn: unique per run, task, sample, turn and code; at most 100 characters.
std::string EvalTaskId(const std::string& run_id, const std::string& task_id, int sample, int turn,
                       const std::string& code);

}  // namespace kgym::agent
