// RunParts: what a RunSpec (run_spec.h) builds for the agent's turn loop, in one place for every command that runs
// it: the prompt templates, the LLM client, the gym, the reward, the skill selector, the loop's configuration and
// the dependencies that point at them. `kgym agent`, `kgym skills evolve`, `kgym sft`'s grading and `kgym train`
// differ only in the spec they start from and in what they do with the trajectories.
//
// RunParts owns everything Deps() points to; it is not copyable. Deps() may be used from many threads once built.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/chat_client.h"
#include "agent/eval_backend.h"
#include "agent/prompt.h"
#include "agent/turn_loop.h"
#include "core/status.h"
#include "run/run_spec.h"
#include "skills/skill_selector.h"

namespace kgym::run {

// The LLM client's options: endpoint, model, the API key read from spec.api_key_env, timeout and retries.
agent::ChatClientOptions ChatOptions(const LlmSpec& spec);

// The per-turn sampling parameters (top_k sent when > 0).
agent::SamplingParams Sampling(const SamplingSpec& spec);

// The gym: the KernelGYM-compatible server when spec.server is set (retries as `llm` says), else kgym's in-process
// evaluator (sandboxed unless the request template says unsafe_no_sandbox).
Status MakeGym(const GymSpec& spec, const LlmSpec& llm, std::unique_ptr<agent::EvalBackend>* out);

// The turn loop's configuration: turns, iterations, sampling, the evaluation template, feedback, rerun threshold.
// `run_id` and `model` come from the spec (callers fill in a default run id first).
agent::TurnLoopConfig LoopConfig(const RunSpec& spec);

class RunParts {
 public:
  RunParts() = default;
  RunParts(const RunParts&) = delete;
  RunParts& operator=(const RunParts&) = delete;

  // Builds every part the spec asks for: the templates and the reward always; the LLM client when
  // spec.llm.base_url is set; the gym unless `gym` is given (then that one is used and not owned); the skill
  // selector when spec.skills.library is set (it needs the LLM client).
  static Status Build(const RunSpec& spec, std::unique_ptr<RunParts>* out, agent::EvalBackend* gym = nullptr);

  // Replaces the LLM client (the trainer's policy endpoint is known only once its learner listens).
  void SetLlm(const LlmSpec& spec);
  // (Re)loads the skill library's newest snapshot at or below skills.step and makes its selector; the
  // selections' seed is the spec's sampling seed. A no-op without skills.library.
  Status LoadSkills(const RunSpec& spec);

  const agent::TurnLoopConfig& loop() const { return loop_; }
  agent::TurnLoopDeps Deps() const;
  agent::ChatClient* llm() const { return llm_.get(); }
  agent::EvalBackend* gym() const { return gym_; }
  const agent::PromptTemplates& templates() const { return templates_; }
  const skills::SkillSelector* selector() const { return selector_.get(); }
  // What the run's record says about the skills (library, step, selections, schemes); null without skills.
  const nlohmann::json& skills_record() const { return skills_record_; }

 private:
  agent::PromptTemplates templates_;
  agent::RewardFn reward_;
  std::unique_ptr<agent::ChatClient> llm_;
  std::unique_ptr<agent::EvalBackend> owned_gym_;
  agent::EvalBackend* gym_ = nullptr;
  std::unique_ptr<skills::SkillSelector> selector_;
  nlohmann::json skills_record_;
  agent::TurnLoopConfig loop_;
};

}  // namespace kgym::run
