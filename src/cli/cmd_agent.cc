// `kgym agent`: runs the multi-turn kernel agent over a dataset against an OpenAI-compatible endpoint and
// writes one JSONL record per trajectory into --out (resumable). See src/agent/agent_runner.h; the run's parameters
// are a RunSpec (src/run/).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "agent/agent_runner.h"
#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "run/run_builder.h"
#include "run/run_params.h"

namespace {

using kgym::run::RunGroup;

struct AgentArgs {
  kgym::run::RunSpec spec;
  std::string tasks, out;
  int limit = 0;
  bool retry_failed = false, no_progress = false, print_prompt = false;
};

int Fail(const kgym::Status& s, int rc) {
  std::fprintf(stderr, "kgym agent: %s\n", s.ToString().c_str());
  return rc;
}

int PrintPrompts(const std::vector<kgym::agent::Task>& tasks, const kgym::run::RunSpec& spec) {
  kgym::agent::TurnLoopDeps deps;
  kgym::agent::PromptTemplates templates;
  if (kgym::Status s = kgym::agent::PromptTemplates::Load(spec.loop.templates, &templates); !s.ok()) return Fail(s, 2);
  deps.templates = &templates;
  const kgym::agent::TurnLoopConfig loop = kgym::run::LoopConfig(spec);
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i) std::fputs("\n\x1e\n", stdout);  // record separator between prompts
    std::fputs(kgym::agent::FirstPrompt(tasks[i], loop, deps).c_str(), stdout);
  }
  return 0;
}

int RunAgentCommand(AgentArgs& a) {
  using namespace kgym::agent;
  kgym::run::RunSpec& spec = a.spec;
  std::vector<Task> tasks;
  if (kgym::Status s = LoadTasks(a.tasks, &tasks); !s.ok()) return Fail(s, 2);
  if (a.print_prompt) return PrintPrompts(tasks, spec);
  if (spec.llm.base_url.empty() || spec.llm.model.empty() || a.out.empty())
    return Fail(kgym::Status::InvalidArgument("--base-url, --model and --out are required"), 2);
  if (spec.loop.run_id.empty()) spec.loop.run_id = std::filesystem::path(a.out).filename().string();
  std::unique_ptr<kgym::run::RunParts> parts;
  if (kgym::Status s = kgym::run::RunParts::Build(spec, &parts); !s.ok()) return Fail(s, 2);
  if (parts->selector() && spec.loop.samples % parts->selector()->num_schemes() != 0)
    std::fprintf(stderr, "kgym agent: warning: --samples %d is not a multiple of the %d skill schemes\n",
                 spec.loop.samples, parts->selector()->num_schemes());

  AgentRunOptions opt;
  opt.out_dir = a.out;
  opt.samples = spec.loop.samples;
  opt.concurrency = spec.loop.concurrency;
  opt.llm_concurrency = spec.loop.llm_concurrency;
  opt.eval_concurrency = spec.gym.eval_concurrency;
  opt.limit_trajectories = a.limit;
  opt.retry_failed = a.retry_failed;
  opt.progress = !a.no_progress;
  opt.lockstep = spec.loop.layout == "lockstep";
  opt.loop = parts->loop();
  opt.config_extra = {{"tasks", a.tasks},
                      {"base_url", spec.llm.base_url},
                      {"server", spec.gym.server},
                      {"reward", spec.reward.function},
                      {"reward_coverage", spec.reward.coverage},
                      {"device", spec.gym.request.device},
                      {"size", spec.gym.request.size},
                      {"num_perf_trials", spec.gym.request.num_perf_trials},
                      {"num_correct_trials", spec.gym.request.num_correct_trials},
                      {"evaluator", parts->gym()->Describe()},
                      {"skills", parts->skills_record()},
                      {"run", spec.ToJson()}};
  AgentRunSummary sum;
  kgym::Status s = RunAgent(tasks, opt, parts->Deps(), &sum);
  std::fprintf(stderr, "kgym agent: %d trajectories (%d already done, %d run, %d failed) -> %s\n", sum.total,
               sum.skipped, sum.ran, sum.failed, a.out.c_str());
  return s.ok() ? 0 : Fail(s, 1);
}

KGYM_REGISTER_COMMAND(
    "agent", "run the multi-turn kernel agent over a dataset (resumable run directory)",
    [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto a = std::make_shared<AgentArgs>();
      kgym::cli::AddSharedOption(sub, "--tasks", &a->tasks, "KernelBench levelN/ or tasks/ folder, .py or .jsonl")
          ->required();
      kgym::cli::AddSharedOption(sub, "--out", &a->out, "the run folder (created; resumed when it exists)");
      kgym::run::AddRunFlags(
          sub, &a->spec,
          {RunGroup::kLlm, RunGroup::kSampling, RunGroup::kGym, RunGroup::kReward, RunGroup::kSkills, RunGroup::kLoop});
      sub->add_flag("--retry-failed", a->retry_failed, "redo trajectories that ended with llm_error/eval_error");
      sub->add_option("--limit", a->limit, "run at most this many new trajectories");
      sub->add_flag("--no-progress", a->no_progress, "no progress line on stderr");
      sub->add_flag("--print-prompt", a->print_prompt, "print each task's first-turn prompt and exit");
      // Old names (issue 35: one name per concept across commands).
      kgym::run::AddOldRunFlag(sub, "--timeout", "--llm-timeout", &a->spec);
      kgym::run::AddOldRunFlag(sub, "--retries", "--max-retries", &a->spec);
      kgym::run::AddOldRunFlag(sub, "--retry-base", "--retry-backoff", &a->spec);
      sub->add_flag_callback(
             "--lockstep",
             [sub, a] {
               a->spec.loop.layout = "lockstep";
               kgym::run::SayNewName(sub, "--lockstep", "--layout lockstep", "");
             },
             "old name of --layout lockstep")
          ->group("");
      return [a] { return RunAgentCommand(*a); };
    });

}  // namespace
