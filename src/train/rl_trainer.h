// RlTrainer: `kgym train`, Dr.Kernel's RL loop with the gradient step in the learner (python/kgym_train).
//
// Per step (research/drkernel.md §3.3 and the order):
//   prompts (TaskSampler) -> multi-turn rollouts through the agent's turn loop against the policy's endpoint, in
//   lockstep (a turn generated for every trajectory, then all evaluated: generation never runs beside a timed
//   kernel) -> gym rewards (speedup reward, coverage term, anomaly re-evaluation) -> learner log-probs of the
//   sampled tokens -> void-turn mask, MRS, PRS, group filter, advantages (rl_step.h) -> one PPO step in the
//   learner -> weights to the rollout engine (nothing to do when the learner serves itself) -> with a skill
//   library (rollout.skills): daVinci's selection schemes in the rollouts and one evolution round after the
//   step (skills/evolve.h: the policy summarises, the gym verifies, the next snapshot is flushed) -> metrics.
// Every step's numbers go to <out_dir>/metrics.jsonl (and the learner's TensorBoard log); rollouts to
// <out_dir>/rollouts/step_N/; validation (Fast@p) every trainer.test_freq steps to <out_dir>/val/step_N/;
// checkpoints every trainer.save_freq steps to <out_dir>/checkpoints/step_N/ (the learner's state plus
// kgym_state.json), from which trainer.resume=auto continues (train/run_resume.h: the steps after the checkpoint are
// done again, and what they had left is dropped first, so no step is counted twice). With trainer.time_budget_s,
// once the time since Run() began plus the longest step so far would pass the budget, the run saves a checkpoint
// and stops (Ok); the same command again continues from it. Per step, the phases' times in metrics.jsonl:
// time/generate_s, time/evaluate_s (the rest of the rollout phase: the gym), time/logprob_s, time/train_call_s (the
// learner's PPO step, whose own time/update_s and time/weight_copy_s, the bf16 parameters refreshed from their
// float32 masters, it contains), time/weight_push_s (to an external engine), time/step_s, time/step_start_unix.
//
// A learner that dies or answers with something not its own (a reply that is not JSON, a 5xx) is restarted from the
// newest checkpoint, up to trainer.max_learner_restarts times, and the steps after that checkpoint are done again;
// each request's sampling seed follows from trainer.seed, the step, the sample and the turn, so the steps done again
// sample what they sampled before. A gym that restarts is waited for (gym.retry_window).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/prompt.h"
#include "agent/task.h"
#include "agent/turn_loop.h"
#include "core/status.h"
#include "run/run_builder.h"
#include "train/eval_cache.h"
#include "train/learner_process.h"
#include "train/rollout_metrics.h"
#include "train/rollouts.h"
#include "train/train_batch.h"

namespace kgym::train {

class RlTrainer {
 public:
  explicit RlTrainer(nlohmann::json config) : cfg_(std::move(config)) {}
  Status Run();

 private:
  Status Setup();
  // `configured`: trainer.resume as configured (the run's start); else the newest checkpoint (a restart).
  Status ResumePoint(bool configured, std::string* resume, int64_t* start);
  Status StartEngines(const std::string& resume);
  // learner_.Call, noting in learner_failed_ a failure that makes the learner's state untrustworthy.
  Status CallLearner(const char* path, const nlohmann::json& body, nlohmann::json* reply, double timeout_s = 3600);
  // One RL step, in phases: the rollouts' plan, rollouts with gym rewards, rows + log-probs + the RL core, one
  // optimizer step and the weights to the engine, the step's numbers (metrics.jsonl).
  Status Step(int64_t step);
  // What a step's phases took (seconds) and the learner's generation counters around its rollouts.
  struct StepPhases {
    std::chrono::steady_clock::time_point start;
    double rollout_s = 0, logprob_s = 0, train_call_s = 0, push_s = 0;
    nlohmann::json before, after;
  };
  RolloutRun PlanRollouts(int64_t step, std::vector<std::string>* ids) const;
  void AddStepNumbers(const StepPhases& phases, nlohmann::json* metrics) const;  // time/* and perf/*
  void KeepRollouts(const std::string& dir) const;                               // trainer.save_rollouts
  Status Validate(int64_t step);
  Status Checkpoint(int64_t step);
  Status PushWeights(int64_t step);
  Status EvolveSkills(int64_t step, const std::string& run_dir, const std::vector<agent::Task>& tasks,
                      nlohmann::json* metrics);
  Status LearnerLogprobs(const TrainBatch& batch, std::vector<std::vector<double>>* out, double* seconds);
  Status WriteMetrics(int64_t step, const nlohmann::json& metrics);
  agent::TurnLoopConfig LoopConfig(bool validation, int64_t step) const;

  nlohmann::json cfg_;
  std::string out_dir_;
  std::vector<agent::Task> train_tasks_, val_tasks_;
  KnownSolutions known_;
  bool have_known_ = false;
  run::RunSpec spec_, val_spec_;  // the rollouts' and validation's parameters (rollouts.h: RlRunSpecs)
  std::unique_ptr<agent::EvalBackend> gym_;
  std::unique_ptr<SharedEvalBackend> shared_gym_;
  std::unique_ptr<run::RunParts> parts_;  // templates, reward, the policy's client, skills (over shared_gym_/gym_)
  LearnerProcess learner_;
  std::string engine_url_;  // external engine's root URL ("" = the learner serves)
  Status learner_failed_;   // the last learner call that failed so (Ok: none since the last restart)
  nlohmann::json last_generation_ = nlohmann::json::object();
};

}  // namespace kgym::train
