#include "run/run_params.h"

#include <cstdio>
#include <sstream>

namespace kgym::run {

namespace {

using G = RunGroup;

// A gym parameter that is a field of the evaluation request, as the request table defines it.
RunParam RequestParam(const char* flag) {
  const request::RequestField* f = request::FindRequestFlag(flag);
  return {G::kGym, f->flag, f->keys, f->help, f->choices, nullptr, f};
}

// clang-format off
const std::vector<RunParam> kParams = {
  // llm
  {G::kLlm, "--base-url", "", "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1", "",
   [](RunSpec* s) -> RunField { return &s->llm.base_url; }},
  {G::kLlm, "--model", "", "model name sent to the endpoint", "",
   [](RunSpec* s) -> RunField { return &s->llm.model; }},
  {G::kLlm, "--api-key-env", "", "environment variable holding the API key", "",
   [](RunSpec* s) -> RunField { return &s->llm.api_key_env; }},
  {G::kLlm, "--llm-timeout", "", "limit of one LLM request, seconds", "",
   [](RunSpec* s) -> RunField { return &s->llm.timeout_s; }},
  {G::kLlm, "--max-retries", "", "retries of a failed attempt (here: LLM and gym requests on 429, 5xx, timeouts)", "",
   [](RunSpec* s) -> RunField { return &s->llm.max_retries; }},
  {G::kLlm, "--retry-backoff", "", "first retry delay in seconds (doubles per retry)", "",
   [](RunSpec* s) -> RunField { return &s->llm.retry_backoff_s; }},
  // sampling
  {G::kSampling, "--temperature", "rollout.temperature", "sampling temperature", "",
   [](RunSpec* s) -> RunField { return &s->sampling.temperature; }},
  {G::kSampling, "--top-p", "rollout.top_p", "nucleus sampling mass", "",
   [](RunSpec* s) -> RunField { return &s->sampling.top_p; }},
  {G::kSampling, "--top-k", "rollout.top_k", "top-k sampling (<= 0: not sent)", "",
   [](RunSpec* s) -> RunField { return &s->sampling.top_k; }},
  {G::kSampling, "--max-tokens", "rollout.response_length,eval.max_tokens", "tokens generated per turn (0 = not sent)",
   "", [](RunSpec* s) -> RunField { return &s->sampling.max_tokens; }},
  {G::kSampling, "--seed", "", "base random seed (per LLM request: seed + 1000*sample + turn; < 0: not sent)", "",
   [](RunSpec* s) -> RunField { return &s->sampling.seed; }},
  {G::kSampling, "--stop", "", "stop strings", "",
   [](RunSpec* s) -> RunField { return &s->sampling.stop; }},
  {G::kSampling, "--logprobs", "", "request and record token log-probs", "",
   [](RunSpec* s) -> RunField { return &s->sampling.logprobs; }},
  {G::kSampling, "--token-ids", "",
   "request and record the prompt's and the reply's token ids (return_token_ids: vLLM >= 0.10.2, kgym's learner)", "",
   [](RunSpec* s) -> RunField { return &s->sampling.token_ids; }},
  // gym
  {G::kGym, "--server", "gym.server", "KernelGYM-compatible gym URL (default: kgym's in-process evaluator)", "",
   [](RunSpec* s) -> RunField { return &s->gym.server; }},
  {G::kGym, "--device", "gym.device", "evaluation device", "cpu|cuda",
   [](RunSpec* s) -> RunField { return &s->gym.request.device; }},
  RequestParam("--backend"),
  RequestParam("--num-correct-trials"),
  RequestParam("--num-perf-trials"),
  RequestParam("--eval-timeout"),
  RequestParam("--size"),
  RequestParam("--reference-backend"),
  {G::kGym, "--compat", "", "KernelGYM status semantics in the results (in-process evaluator)", "",
   [](RunSpec* s) -> RunField { return &s->gym.compat; }},
  {G::kGym, "--unsafe-no-sandbox", "gym.unsafe_no_sandbox", "evaluate without the sandbox (trusted code only)", "",
   [](RunSpec* s) -> RunField { return &s->gym.request.unsafe_no_sandbox; }},
  {G::kGym, "--eval-concurrency", "gym.eval_concurrency", "evaluations in flight", "",
   [](RunSpec* s) -> RunField { return &s->gym.eval_concurrency; }},
  {G::kGym, "--gym-retry-window", "gym.retry_window",
   "seconds a gym.server request that fails in passing (no answer, 429, 5xx) is sent again (0: --max-retries)", "",
   [](RunSpec* s) -> RunField { return &s->gym.retry_window_s; }},
  // reward
  {G::kReward, "--reward", "reward.reward_func_name", "reward function", 
   "calculate_reward_speedup|calculate_reward_weighted|calculate_reward_like_kernel",
   [](RunSpec* s) -> RunField { return &s->reward.function; }},
  {G::kReward, "--reward-coverage", "reward.coverage_reward",
   "add the profiling-coverage term (the RL recipe's; off in Dr.Kernel's eval scripts)", "",
   [](RunSpec* s) -> RunField { return &s->reward.coverage; }},
  {G::kReward, "--rerun-above-speedup", "reward.rerun_above_speedup",
   "evaluate once more when the speedup exceeds this (0 = never)", "",
   [](RunSpec* s) -> RunField { return &s->reward.rerun_above_speedup; }},
  // skills
  {G::kSkills, "--skills", "rollout.skills",
   "skill library folder: select skills per task and inject them (sample i runs scheme i % (k+1); scheme k is the "
   "null scheme)", "", [](RunSpec* s) -> RunField { return &s->skills.library; }},
  {G::kSkills, "--skill-step", "", "use the newest snapshot with step <= N (default newest)", "",
   [](RunSpec* s) -> RunField { return &s->skills.step; }},
  {G::kSkills, "--skill-selections", "rollout.skill_selections", "k: selection calls per task", "",
   [](RunSpec* s) -> RunField { return &s->skills.selections; }},
  {G::kSkills, "--skill-temperature", "", "selection sampling temperature", "",
   [](RunSpec* s) -> RunField { return &s->skills.temperature; }},
  {G::kSkills, "--skill-max-tokens", "", "selection call budget", "",
   [](RunSpec* s) -> RunField { return &s->skills.max_tokens; }},
  {G::kSkills, "--skill-greedy", "",
   "evaluation mode: one greedy selection per task, every sample injected, no null scheme", "",
   [](RunSpec* s) -> RunField { return &s->skills.greedy; }},
  {G::kSkills, "--skill-no-null", "", "no null scheme: sample i runs selection i % k", "",
   [](RunSpec* s) -> RunField { return &s->skills.no_null; }},
  {G::kSkills, "--skill-summaries", "rollout.skill_summaries", "summaries sampled per triggered task", "",
   [](RunSpec* s) -> RunField { return &s->skills.summaries; }},
  // loop
  {G::kLoop, "--turns", "rollout.max_turns", "turns per trajectory (per iteration)", "",
   [](RunSpec* s) -> RunField { return &s->loop.turns; }},
  {G::kLoop, "--samples", "rollout.n", "trajectories per task", "",
   [](RunSpec* s) -> RunField { return &s->loop.samples; }},
  {G::kLoop, "--iterations", "", "sequential test-time scaling iterations", "",
   [](RunSpec* s) -> RunField { return &s->loop.iterations; }},
  {G::kLoop, "--keep-turns", "", "turns kept in the context between iterations", "",
   [](RunSpec* s) -> RunField { return &s->loop.keep_turns; }},
  {G::kLoop, "--keep-method", "", "which turns are kept: best (contiguous window by reward) | last", "best|last",
   [](RunSpec* s) -> RunField { return &s->loop.keep_method; }},
  {G::kLoop, "--layout", "rollout.layout",
   "concurrent, or lockstep: every trajectory generates a turn, then all are evaluated (an engine and kernel timing "
   "that share one GPU)", "concurrent|lockstep", [](RunSpec* s) -> RunField { return &s->loop.layout; }},
  {G::kLoop, "--concurrency", "", "trajectories in flight (layout concurrent)", "",
   [](RunSpec* s) -> RunField { return &s->loop.concurrency; }},
  {G::kLoop, "--llm-concurrency", "rollout.llm_concurrency", "LLM requests in flight", "",
   [](RunSpec* s) -> RunField { return &s->loop.llm_concurrency; }},
  {G::kLoop, "--no-dataset-prompt", "", "render the template even when the task stores a prompt", "",
   [](RunSpec* s) -> RunField { return &s->loop.no_dataset_prompt; }},
  {G::kLoop, "--templates", "", "prompt template folder (default: the built-in ones)", "",
   [](RunSpec* s) -> RunField { return &s->loop.templates; }},
  {G::kLoop, "--feedback-max-chars", "", "bound on the feedback text (0 = none)", "",
   [](RunSpec* s) -> RunField { return &s->loop.feedback_max_chars; }},
  {G::kLoop, "--run-id", "", "prefix of evaluation task ids (default: the output folder's name)", "",
   [](RunSpec* s) -> RunField { return &s->loop.run_id; }},
};
// clang-format on

const char* GroupName(RunGroup g) {
  switch (g) {
    case G::kLlm:
      return "LLM endpoint";
    case G::kSampling:
      return "Sampling";
    case G::kGym:
      return "Gym (evaluation)";
    case G::kReward:
      return "Reward";
    case G::kSkills:
      return "Skills";
    case G::kLoop:
      return "Turn loop";
  }
  return "";
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

const nlohmann::json* At(const nlohmann::json& cfg, const std::string& dotted) {
  const nlohmann::json* cur = &cfg;
  for (const auto& part : Split(dotted, '.')) {
    if (!cur->is_object() || !cur->contains(part)) return nullptr;
    cur = &(*cur)[part];
  }
  return cur;
}

Status Assign(const std::string& key, const nlohmann::json& v, const RunParam& p, RunField f) {
  auto bad = [&](const char* want) {
    return Status::InvalidArgument(key + ": expected " + want + ", got " + v.dump() + " (" + p.help + ")");
  };
  if (p.request) {  // the request table's type, limits and choices, as over HTTP
    nlohmann::json normalized;
    if (auto problem = request::CheckJson(*p.request, v, &normalized))
      return Status::InvalidArgument(key + ": " + problem->msg + ", got " + v.dump() + " (" + p.help + ")");
    return Assign(key, normalized, RunParam{p.group, p.flag, p.keys, p.help, "", nullptr}, f);
  }
  return std::visit(
      [&](auto* ptr) -> Status {
        using T = std::remove_pointer_t<decltype(ptr)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) return bad("true or false");
          *ptr = v.get<bool>();
        } else if constexpr (std::is_same_v<T, double>) {
          if (!v.is_number()) return bad("a number");
          *ptr = v.get<double>();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (!v.is_string()) return bad("a string");
          std::string s = v.get<std::string>();
          if (*p.choices && !s.empty()) {
            bool ok = false;
            for (const auto& c : Split(p.choices, '|')) ok |= c == s;
            if (!ok) return bad(p.choices);
          }
          *ptr = std::move(s);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          if (!v.is_array()) return bad("a list of strings");
          ptr->clear();
          for (const auto& e : v) {
            if (!e.is_string()) return bad("a list of strings");
            ptr->push_back(e.get<std::string>());
          }
        } else {  // integers
          if (!v.is_number_integer() || (std::is_unsigned_v<T> && v.get<int64_t>() < 0))
            return bad(std::is_unsigned_v<T> ? "an integer >= 0" : "an integer");
          *ptr = static_cast<T>(v.get<int64_t>());
        }
        return Status::Ok();
      },
      f);
}

}  // namespace

const std::vector<RunParam>& RunParams() { return kParams; }

const RunParam* FindRunParam(const std::string& flag) {
  for (const auto& p : kParams)
    if (flag == p.flag) return &p;
  return nullptr;
}

RunField RunParam::Field(RunSpec* spec) const {
  if (!request) return field(spec);
  return std::visit([](auto* ptr) -> RunField { return ptr; }, request->slot(&spec->gym.request));
}

nlohmann::json RunSpec::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  RunSpec copy = *this;
  for (const auto& p : kParams) std::visit([&](auto* ptr) { j[std::string(p.flag).substr(2)] = *ptr; }, p.Field(&copy));
  return j;
}

namespace {

void AddRunFlag(CLI::App* app, RunSpec* spec, const RunParam& p) {
  CLI::Option* o = std::visit(
      [&](auto* ptr) -> CLI::Option* {
        using T = std::remove_pointer_t<decltype(ptr)>;
        if constexpr (std::is_same_v<T, bool>)
          return app->add_flag(p.flag, *ptr, p.help);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          return app->add_option(p.flag, *ptr, p.help);
        else
          return app->add_option(p.flag, *ptr, p.help)->capture_default_str();
      },
      p.Field(spec));
  if (p.request)
    o->check(request::Validator(*p.request));  // the request table's type, limits and choices
  else if (*p.choices)
    o->check(CLI::IsMember(Split(p.choices, '|')));
  o->group(GroupName(p.group));
}

}  // namespace

void AddRunFlags(CLI::App* app, RunSpec* spec, std::initializer_list<RunGroup> groups) {
  for (const auto& p : kParams)
    for (RunGroup g : groups)
      if (g == p.group) AddRunFlag(app, spec, p);
}

void AddRunFlags(CLI::App* app, RunSpec* spec, std::initializer_list<const char*> flags) {
  for (const char* f : flags)
    if (const RunParam* p = FindRunParam(f)) AddRunFlag(app, spec, *p);
}

void SayNewName(const CLI::App* app, const std::string& old_name, const std::string& new_name,
                const std::string& note) {
  std::string cmd;
  for (const CLI::App* a = app; a && a->get_parent(); a = a->get_parent())
    cmd = a->get_name() + (cmd.empty() ? "" : " " + cmd);
  std::fprintf(stderr, "kgym %s: %s is now %s%s\n", cmd.c_str(), old_name.c_str(), new_name.c_str(),
               note.empty() ? "" : ("; " + note).c_str());
}

void AddOldRunFlag(CLI::App* app, const std::string& old_name, const std::string& new_flag, RunSpec* spec,
                   const std::string& note) {
  const RunParam* p = FindRunParam(new_flag);
  if (!p) return;
  CLI::Option* o = std::visit(
      [&](auto* ptr) -> CLI::Option* {
        using T = std::remove_pointer_t<decltype(ptr)>;
        if constexpr (std::is_same_v<T, bool>)
          return app->add_flag(old_name, *ptr);
        else
          return app->add_option(old_name, *ptr);
      },
      p->Field(spec));
  if (p->request) o->check(request::Validator(*p->request));
  o->description("old name of " + new_flag)->group("");
  o->each([app, old_name, new_flag, note](const std::string&) { SayNewName(app, old_name, new_flag, note); });
}

void AddOldRequestFlag(CLI::App* app, const std::string& old_name, const std::string& new_flag, EvalRequest* req) {
  const request::RequestField* f = request::FindRequestFlag(new_flag);
  if (!f) return;
  CLI::Option* o = std::visit(
      [&](auto* ptr) -> CLI::Option* {
        if constexpr (std::is_same_v<std::remove_pointer_t<decltype(ptr)>, bool>)
          return app->add_flag(old_name, *ptr);
        else
          return app->add_option(old_name, *ptr)->check(request::Validator(*f));
      },
      f->slot(req));
  o->description("old name of " + new_flag)->group("");
  o->each([app, old_name, new_flag](const std::string&) { SayNewName(app, old_name, new_flag, ""); });
}

Status ReadRunConfig(const nlohmann::json& config, RunSpec* spec) {
  for (const auto& p : kParams)
    for (const auto& key : Split(p.keys, ',')) {
      const nlohmann::json* v = At(config, key);
      if (!v || v->is_null()) continue;
      if (Status s = Assign(key, *v, p, p.Field(spec)); !s.ok()) return s;
    }
  return Status::Ok();
}

}  // namespace kgym::run
