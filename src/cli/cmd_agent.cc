// `kgym agent`: runs the multi-turn kernel agent over a dataset against an OpenAI-compatible endpoint and
// writes one JSONL record per trajectory into --out (resumable). See src/agent/agent_runner.h.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "agent/agent_runner.h"
#include "agent/reward_bridge.h"
#include "cli/command_registry.h"
#include "skills/skill_selector.h"
#include "skills/snapshot_store.h"

namespace {

struct AgentArgs {
  std::string tasks, base_url, model, out, server, api_key_env = "OPENAI_API_KEY", reward = "calculate_reward_speedup";
  std::string keep_method = "best", device = "cpu", size, reference_backend, templates, run_id, skills;
  int skill_selections = 3, skill_max_tokens = 1024;
  int64_t skill_step = -1;
  double skill_temperature = 1.0;
  bool skill_greedy = false, skill_no_null = false;
  int turns = 3, samples = 8, iterations = 1, keep_turns = 4, max_tokens = 8192, seed = -1, retries = 4;
  int concurrency = 16, llm_concurrency = 8, eval_concurrency = 4, num_correct_trials = 5, num_perf_trials = 10;
  int limit = 0;
  double temperature = 1.0, top_p = 0.95, timeout = 600, retry_base = 1.0, eval_timeout = 600;
  size_t feedback_max_chars = 8000;
  std::vector<std::string> stop;
  bool logprobs = false, compat = false, unsafe_no_sandbox = false, no_dataset_prompt = false;
  bool retry_failed = false, no_progress = false, print_prompt = false, reward_coverage = false;
  bool lockstep = false, token_ids = false;
};

int RunAgentCommand(const AgentArgs& a) {
  using namespace kgym::agent;
  std::vector<Task> tasks;
  kgym::Status s = LoadTasks(a.tasks, &tasks);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
    return 2;
  }
  PromptTemplates templates;
  s = PromptTemplates::Load(a.templates, &templates);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
    return 2;
  }
  TurnLoopConfig loop;
  loop.use_dataset_prompt = !a.no_dataset_prompt;
  TurnLoopDeps deps;
  deps.templates = &templates;
  if (a.print_prompt) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (i) std::fputs("\n\x1e\n", stdout);  // record separator between prompts
      std::fputs(FirstPrompt(tasks[i], loop, deps).c_str(), stdout);
    }
    return 0;
  }
  if (a.base_url.empty() || a.model.empty() || a.out.empty()) {
    std::fprintf(stderr, "kgym agent: --base-url, --model and --out are required\n");
    return 2;
  }
  ChatClientOptions co;
  co.base_url = a.base_url;
  co.model = a.model;
  if (const char* key = std::getenv(a.api_key_env.c_str())) co.api_key = key;
  co.timeout_s = a.timeout;
  co.max_retries = a.retries;
  co.backoff_base_s = a.retry_base;
  ChatClient llm(co);

  std::unique_ptr<EvalBackend> eval;
  if (!a.server.empty()) {
    HttpGymOptions go;
    go.base_url = a.server;
    go.max_retries = a.retries;
    go.backoff_base_s = a.retry_base;
    eval = MakeHttpGymBackend(go);
  } else {
    s = MakeInProcessBackend(a.unsafe_no_sandbox, a.compat, &eval);
    if (!s.ok()) {
      std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
      return 2;
    }
  }
  RewardFn reward;
  s = MakeRewardFn(a.reward, a.reward_coverage, &reward);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
    return 2;
  }

  loop.turns = a.turns;
  loop.iterations = a.iterations;
  loop.keep_turns = a.keep_turns;
  loop.keep_method = a.keep_method;
  loop.seed = a.seed;
  loop.model = a.model;
  loop.run_id = a.run_id.empty() ? std::filesystem::path(a.out).filename().string() : a.run_id;
  if (loop.run_id.empty()) loop.run_id = "run";
  loop.sampling.temperature = a.temperature;
  loop.sampling.top_p = a.top_p;
  loop.sampling.max_tokens = a.max_tokens;
  loop.sampling.stop = a.stop;
  loop.sampling.logprobs = a.logprobs;
  loop.sampling.return_token_ids = a.token_ids;
  loop.eval.device = a.device;
  loop.eval.num_correct_trials = a.num_correct_trials;
  loop.eval.num_perf_trials = a.num_perf_trials;
  loop.eval.timeout_s = a.eval_timeout;
  loop.eval.size = a.size;
  loop.eval.reference_backend = a.reference_backend;
  loop.eval.unsafe_no_sandbox = a.unsafe_no_sandbox;
  loop.feedback.max_chars = a.feedback_max_chars;

  // Skill selection (daVinci): k selection calls per task, scheme = sample % (k + 1), the last one null.
  std::unique_ptr<kgym::skills::SkillSelector> selector;
  nlohmann::json skills_config = nullptr;
  if (!a.skills.empty()) {
    kgym::skills::LoadedSnapshot snap;
    s = kgym::skills::LoadSnapshot(a.skills, a.skill_step, &snap);
    if (!s.ok()) {
      std::fprintf(stderr, "kgym agent: --skills: %s\n", s.ToString().c_str());
      return 2;
    }
    kgym::skills::SkillSelectorOptions so;
    so.selections = a.skill_greedy ? 1 : a.skill_selections;
    so.null_scheme = !(a.skill_greedy || a.skill_no_null);
    so.sampling.temperature = a.skill_greedy ? 0.0 : a.skill_temperature;
    so.sampling.max_tokens = a.skill_max_tokens;
    so.sampling.seed = a.seed;
    so.library_step = snap.step;
    if (so.selections < 1) {
      std::fprintf(stderr, "kgym agent: --skill-selections must be >= 1\n");
      return 2;
    }
    const size_t n_skills = snap.skills.size();
    auto lib = std::make_shared<const kgym::skills::SkillLibrary>(std::move(snap.skills));
    selector = std::make_unique<kgym::skills::SkillSelector>(lib, &llm, so);
    deps.first_turn_rewriter = selector->AsRewriter();
    skills_config = {{"library", a.skills},
                     {"step", so.library_step},
                     {"skills", n_skills},
                     {"selections", so.selections},
                     {"null_scheme", so.null_scheme},
                     {"schemes", selector->num_schemes()},
                     {"temperature", so.sampling.temperature}};
    if (a.samples % selector->num_schemes() != 0)
      std::fprintf(stderr, "kgym agent: warning: --samples %d is not a multiple of the %d skill schemes\n", a.samples,
                   selector->num_schemes());
  }

  deps.llm = &llm;
  deps.eval = eval.get();
  deps.reward = reward;
  AgentRunOptions opt;
  opt.out_dir = a.out;
  opt.samples = a.samples;
  opt.concurrency = a.concurrency;
  opt.llm_concurrency = a.llm_concurrency;
  opt.eval_concurrency = a.eval_concurrency;
  opt.limit_trajectories = a.limit;
  opt.retry_failed = a.retry_failed;
  opt.progress = !a.no_progress;
  opt.lockstep = a.lockstep;
  opt.loop = loop;
  opt.config_extra = {{"tasks", a.tasks},
                      {"base_url", a.base_url},
                      {"server", a.server},
                      {"reward", a.reward},
                      {"reward_coverage", a.reward_coverage},
                      {"device", a.device},
                      {"size", a.size},
                      {"num_perf_trials", a.num_perf_trials},
                      {"num_correct_trials", a.num_correct_trials},
                      {"evaluator", eval->Describe()},
                      {"skills", skills_config}};
  AgentRunSummary sum;
  s = RunAgent(tasks, opt, deps, &sum);
  std::fprintf(stderr, "kgym agent: %d trajectories (%d already done, %d run, %d failed) -> %s\n", sum.total,
               sum.skipped, sum.ran, sum.failed, a.out.c_str());
  if (!s.ok()) {
    std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

KGYM_REGISTER_COMMAND(
    "agent", "run the multi-turn kernel agent over a dataset (resumable run directory)",
    [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto a = std::make_shared<AgentArgs>();
      sub->add_option("--tasks", a->tasks, "task directory (KernelBench levelN/ or tasks/), .py or .jsonl")->required();
      sub->add_option("--base-url", a->base_url, "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1");
      sub->add_option("--model", a->model, "model name sent to the endpoint");
      sub->add_option("--out", a->out, "run directory (created; resumed when it exists)");
      sub->add_option("--turns", a->turns, "turns per trajectory (per iteration)")->capture_default_str();
      sub->add_option("--samples", a->samples, "trajectories per task")->capture_default_str();
      sub->add_option("--iterations", a->iterations, "sequential test-time scaling iterations")->capture_default_str();
      sub->add_option("--keep-turns", a->keep_turns, "turns kept in the context between iterations")
          ->capture_default_str();
      sub->add_option("--keep-method", a->keep_method, "best (contiguous window by reward) | last")
          ->capture_default_str();
      sub->add_option("--server", a->server, "KernelGYM-compatible server URL (default: in-process evaluator)");
      sub->add_option("--api-key-env", a->api_key_env, "environment variable holding the API key")
          ->capture_default_str();
      sub->add_option("--reward", a->reward,
                      "calculate_reward_speedup | calculate_reward_weighted | calculate_reward_like_kernel")
          ->capture_default_str();
      sub->add_flag("--reward-coverage", a->reward_coverage,
                    "add the profiling-coverage term (RL recipe); off like Dr.Kernel's eval scripts");
      sub->add_option("--temperature", a->temperature)->capture_default_str();
      sub->add_option("--top-p", a->top_p)->capture_default_str();
      sub->add_option("--max-tokens", a->max_tokens, "per-turn generation budget (0 = not sent)")
          ->capture_default_str();
      sub->add_option("--stop", a->stop, "stop strings");
      sub->add_flag("--logprobs", a->logprobs, "request and record token log-probs");
      sub->add_flag("--token-ids", a->token_ids,
                    "request and record the prompt's and the reply's token ids "
                    "(return_token_ids: vLLM >= 0.10.2, kgym's learner)");
      sub->add_flag("--lockstep", a->lockstep,
                    "all trajectories at once, generating a turn for every one, then "
                    "evaluating them all (an engine and kernel timing that share one GPU)");
      sub->add_option("--seed", a->seed, "base sampling seed (per request: seed + 1000*sample + turn)");
      sub->add_option("--timeout", a->timeout, "per LLM request timeout, seconds")->capture_default_str();
      sub->add_option("--retries", a->retries, "retries on 429/5xx/timeouts (LLM and server)")->capture_default_str();
      sub->add_option("--retry-base", a->retry_base, "first backoff delay, seconds (doubles per retry)")
          ->capture_default_str();
      sub->add_option("--concurrency", a->concurrency, "trajectories in flight")->capture_default_str();
      sub->add_option("--llm-concurrency", a->llm_concurrency, "LLM requests in flight")->capture_default_str();
      sub->add_option("--eval-concurrency", a->eval_concurrency, "evaluations in flight")->capture_default_str();
      sub->add_option("--device", a->device, "cpu | cuda (in-process evaluator)")->capture_default_str();
      sub->add_option("--size", a->size, "task size passed to the tasks (e.g. small)");
      sub->add_option("--num-correct-trials", a->num_correct_trials)->capture_default_str();
      sub->add_option("--num-perf-trials", a->num_perf_trials)->capture_default_str();
      sub->add_option("--eval-timeout", a->eval_timeout, "per evaluation timeout, seconds")->capture_default_str();
      sub->add_option("--reference-backend", a->reference_backend, "pytorch | torch_compile");
      sub->add_flag("--compat", a->compat, "KernelGYM status semantics in results");
      sub->add_flag("--unsafe-no-sandbox", a->unsafe_no_sandbox, "run candidates without the sandbox");
      sub->add_option("--templates", a->templates, "prompt template directory (default: built-in)");
      sub->add_flag("--no-dataset-prompt", a->no_dataset_prompt,
                    "render the template even when the task stores a prompt");
      sub->add_option("--feedback-max-chars", a->feedback_max_chars, "bound on the feedback text (0 = none)")
          ->capture_default_str();
      sub->add_flag("--retry-failed", a->retry_failed, "redo trajectories that ended with llm_error/eval_error");
      sub->add_option("--limit", a->limit, "run at most this many new trajectories");
      sub->add_option("--run-id", a->run_id, "prefix of evaluation task ids (default: the --out name)");
      sub->add_flag("--no-progress", a->no_progress, "no progress line on stderr");
      sub->add_flag("--print-prompt", a->print_prompt, "print each task's first-turn prompt and exit");
      sub->add_option("--skills", a->skills,
                      "skill library directory: select skills per task and inject them (sample i runs scheme "
                      "i % (k+1); scheme k is the null scheme)");
      sub->add_option("--skill-step", a->skill_step, "use the newest snapshot with step <= N (default newest)");
      sub->add_option("--skill-selections", a->skill_selections, "k: selection calls per task")->capture_default_str();
      sub->add_option("--skill-temperature", a->skill_temperature, "selection sampling temperature")
          ->capture_default_str();
      sub->add_option("--skill-max-tokens", a->skill_max_tokens, "selection call budget")->capture_default_str();
      sub->add_flag("--skill-greedy", a->skill_greedy,
                    "evaluation mode: one greedy selection per task, every sample injected, no null scheme");
      sub->add_flag("--skill-no-null", a->skill_no_null, "no null scheme: sample i runs selection i % k");
      return [a] { return RunAgentCommand(*a); };
    });

}  // namespace
