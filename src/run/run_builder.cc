#include "run/run_builder.h"

#include <cstdlib>

#include "agent/reward_bridge.h"
#include "skills/snapshot_store.h"

namespace kgym::run {

agent::ChatClientOptions ChatOptions(const LlmSpec& spec) {
  agent::ChatClientOptions o;
  o.base_url = spec.base_url;
  o.model = spec.model;
  if (const char* key = std::getenv(spec.api_key_env.c_str()); key && !spec.api_key_env.empty()) o.api_key = key;
  o.timeout_s = spec.timeout_s;
  o.max_retries = spec.max_retries;
  o.backoff_base_s = spec.retry_backoff_s;
  return o;
}

agent::SamplingParams Sampling(const SamplingSpec& spec) {
  agent::SamplingParams p;
  p.temperature = spec.temperature;
  p.top_p = spec.top_p;
  p.max_tokens = spec.max_tokens;
  p.stop = spec.stop;
  p.logprobs = spec.logprobs;
  p.return_token_ids = spec.token_ids;
  if (spec.top_k > 0) p.extra["top_k"] = spec.top_k;
  return p;
}

Status MakeGym(const GymSpec& spec, const LlmSpec& llm, std::unique_ptr<agent::EvalBackend>* out) {
  if (!spec.server.empty()) {
    agent::HttpGymOptions o;
    o.base_url = spec.server;
    o.max_retries = llm.max_retries;
    o.backoff_base_s = llm.retry_backoff_s;
    o.retry_window_s = spec.retry_window_s;
    *out = agent::MakeHttpGymBackend(o);
    return Status::Ok();
  }
  return agent::MakeInProcessBackend(spec.request.unsafe_no_sandbox, spec.compat, out);
}

agent::TurnLoopConfig LoopConfig(const RunSpec& spec) {
  agent::TurnLoopConfig c;
  c.turns = spec.loop.turns;
  c.iterations = spec.loop.iterations;
  c.keep_turns = spec.loop.keep_turns;
  c.keep_method = spec.loop.keep_method;
  c.use_dataset_prompt = !spec.loop.no_dataset_prompt;
  c.rerun_above_speedup = spec.reward.rerun_above_speedup;
  c.seed = spec.sampling.seed;
  c.sampling = Sampling(spec.sampling);
  c.eval = spec.gym.request;
  c.feedback.max_chars = spec.loop.feedback_max_chars;
  c.run_id = spec.loop.run_id.empty() ? "run" : spec.loop.run_id;
  c.model = spec.llm.model;
  return c;
}

Status RunParts::Build(const RunSpec& spec, std::unique_ptr<RunParts>* out, agent::EvalBackend* gym) {
  auto p = std::make_unique<RunParts>();
  Status s = agent::PromptTemplates::Load(spec.loop.templates, &p->templates_);
  if (s.ok()) s = agent::MakeRewardFn(spec.reward.function, spec.reward.coverage, &p->reward_);
  if (!s.ok()) return s;
  if (!spec.llm.base_url.empty()) p->SetLlm(spec.llm);
  p->gym_ = gym;
  if (!gym) {
    s = MakeGym(spec.gym, spec.llm, &p->owned_gym_);
    if (!s.ok()) return s;
    p->gym_ = p->owned_gym_.get();
  }
  s = p->LoadSkills(spec);
  if (!s.ok()) return s;
  p->loop_ = LoopConfig(spec);
  *out = std::move(p);
  return Status::Ok();
}

void RunParts::SetLlm(const LlmSpec& spec) {
  llm_ = std::make_unique<agent::ChatClient>(ChatOptions(spec));
  loop_.model = spec.model;
}

Status RunParts::LoadSkills(const RunSpec& spec) {
  const SkillsSpec& k = spec.skills;
  if (k.library.empty()) return Status::Ok();
  if (!llm_) return Status::InvalidArgument("skills need an LLM endpoint (--base-url) to select them");
  skills::LoadedSnapshot snap;
  Status s = skills::LoadSnapshot(k.library, k.step, &snap);
  if (!s.ok()) return Status::InvalidArgument("skills " + k.library + ": " + s.message());
  skills::SkillSelectorOptions so;
  so.selections = k.greedy ? 1 : k.selections;
  so.null_scheme = !(k.greedy || k.no_null);
  so.sampling.temperature = k.greedy ? 0.0 : k.temperature;
  so.sampling.max_tokens = k.max_tokens;
  so.sampling.seed = spec.sampling.seed;
  so.library_step = snap.step;
  if (so.selections < 1) return Status::InvalidArgument("--skill-selections must be >= 1");
  const size_t n_skills = snap.skills.size();
  auto lib = std::make_shared<const skills::SkillLibrary>(std::move(snap.skills));
  selector_ = std::make_unique<skills::SkillSelector>(lib, llm_.get(), so);
  skills_record_ = {{"library", k.library},
                    {"step", so.library_step},
                    {"skills", n_skills},
                    {"selections", so.selections},
                    {"null_scheme", so.null_scheme},
                    {"schemes", selector_->num_schemes()},
                    {"temperature", so.sampling.temperature}};
  return Status::Ok();
}

agent::TurnLoopDeps RunParts::Deps() const {
  agent::TurnLoopDeps d;
  d.llm = llm_.get();
  d.eval = gym_;
  d.reward = reward_;
  d.templates = &templates_;
  if (selector_) d.first_turn_rewriter = selector_->AsRewriter();
  return d;
}

}  // namespace kgym::run
