#include "train/rollouts.h"

#include <filesystem>

#include "agent/run_dir.h"

namespace kgym::train {

Status MakeGym(const nlohmann::json& gym, std::unique_ptr<agent::EvalBackend>* out) {
  const auto& server = gym["server"];
  if (server.is_string() && !server.get<std::string>().empty()) {
    agent::HttpGymOptions o;
    o.base_url = server.get<std::string>();
    o.retry_window_s = gym.value("retry_window", 600.0);
    *out = agent::MakeHttpGymBackend(o);
    return Status::Ok();
  }
  return agent::MakeInProcessBackend(gym.value("unsafe_no_sandbox", false), false, out);
}

EvalRequest EvalTemplate(const nlohmann::json& gym) {
  EvalRequest r;
  r.device = gym.value("device", "cuda");
  r.backend = gym.value("backend", "triton");
  r.timeout_s = gym.value("timeout", 300.0);
  if (gym.contains("num_correct_trials")) r.num_correct_trials = gym["num_correct_trials"].get<int>();
  if (gym.contains("num_perf_trials")) r.num_perf_trials = gym["num_perf_trials"].get<int>();
  if (gym.contains("size") && gym["size"].is_string()) r.size = gym["size"].get<std::string>();
  if (gym["reference_backend"].is_string()) r.reference_backend = gym["reference_backend"].get<std::string>();
  r.unsafe_no_sandbox = gym.value("unsafe_no_sandbox", false);
  return r;
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
