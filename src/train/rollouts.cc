#include "train/rollouts.h"

#include <algorithm>
#include <filesystem>

#include "agent/run_dir.h"
#include "run/run_params.h"

namespace kgym::train {

Status RlRunSpecs(const nlohmann::json& cfg, run::RunSpec* train, run::RunSpec* val) {
  run::RunSpec t;
  Status s = run::ReadRunConfig(cfg, &t);
  if (!s.ok()) return s;
  t.sampling.logprobs = t.sampling.token_ids = true;  // MRS compares the engine's log-probs with the learner's
  t.skills.max_tokens = std::min(t.skills.max_tokens, t.sampling.max_tokens);
  t.llm.timeout_s = 3600;
  t.llm.max_retries = 2;
  run::RunSpec v = t;
  v.sampling.logprobs = v.sampling.token_ids = false;
  const nlohmann::json& rv = cfg["rollout"]["val"];
  v.loop.samples = rv["n"].get<int>();
  v.loop.turns = rv["max_turns"].get<int>();
  v.sampling.temperature = rv["temperature"].get<double>();
  v.sampling.top_p = rv["top_p"].get<double>();
  *train = std::move(t);
  *val = std::move(v);
  return Status::Ok();
}

Status GradeRunSpec(const nlohmann::json& cfg, run::RunSpec* out) {
  run::RunSpec g;
  Status s = run::ReadRunConfig(cfg, &g);
  if (!s.ok()) return s;
  g.loop.samples = 1;
  g.loop.turns = 1;
  g.sampling.temperature = 0.0;
  g.sampling.top_p = 1.0;
  g.llm.timeout_s = 3600;
  *out = std::move(g);
  return Status::Ok();
}

Status LoadTaskSet(const nlohmann::json& files, const nlohmann::json& only, std::vector<agent::Task>* out) {
  std::vector<agent::Task> all;
  for (const auto& f : files) {
    std::vector<agent::Task> part;
    Status s = agent::LoadTasks(f.get<std::string>(), &part);
    if (!s.ok()) return s;
    all.insert(all.end(), part.begin(), part.end());
  }
  std::vector<agent::Task> kept;
  for (auto& t : all) {
    bool keep = only.empty();
    for (const auto& o : only) {
      const std::string want = o.get<std::string>();
      keep |= t.id == want || t.id.find(want) != std::string::npos;
    }
    if (keep) kept.push_back(std::move(t));
  }
  if (kept.empty()) return Status::InvalidArgument("no task left after the filter " + only.dump());
  *out = std::move(kept);
  return Status::Ok();
}

Status RunRollouts(const RolloutRun& run, agent::TurnLoopDeps deps, std::vector<nlohmann::json>* records) {
  std::error_code ec;
  std::filesystem::remove_all(run.out_dir, ec);
  agent::AgentRunOptions opt;
  opt.out_dir = run.out_dir;
  opt.samples = run.samples;
  opt.concurrency = static_cast<int>(run.tasks.size()) * run.samples;
  opt.llm_concurrency = run.llm_concurrency;
  opt.eval_concurrency = run.eval_concurrency;
  opt.lockstep = run.lockstep;
  opt.progress = false;
  opt.loop = run.loop;
  agent::AgentRunSummary sum;
  Status s = agent::RunAgent(run.tasks, opt, deps, &sum);
  if (!s.ok()) return s;
  return agent::LoadTrajectories(run.out_dir, records);
}

}  // namespace kgym::train
