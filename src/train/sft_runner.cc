#include "train/sft_runner.h"

#include <filesystem>
#include <fstream>

#include "agent/reward_bridge.h"
#include "grade/metrics.h"
#include "train/learner_process.h"
#include "train/rollout_metrics.h"
#include "train/rollouts.h"

namespace kgym::train {

Status GradeModel(const nlohmann::json& cfg, const std::string& model_dir, const std::string& out_dir,
                  nlohmann::json* summary) {
  const auto& ev = cfg["eval"];
  std::filesystem::create_directories(out_dir);
  RolloutRun run;
  Status s = LoadTaskSet(nlohmann::json::array({ev["tasks"]}), ev["only"], &run.tasks);
  if (!s.ok()) return s;
  LearnerProcess learner;
  LearnerLaunch l;
  if (cfg["learner"]["python"].is_string()) l.python = cfg["learner"]["python"].get<std::string>();
  l.config_path = cfg["trainer"]["out_dir"].get<std::string>() + "/config.json";
  l.model = model_dir;
  l.log_path = out_dir + "/learner.log";
  l.startup_timeout_s = cfg["learner"]["startup_timeout"].get<double>();
  s = LearnerPlacement(cfg["trainer"], &l);
  if (s.ok()) s = learner.Start(l);
  if (!s.ok()) return s;
  agent::ChatClientOptions co;
  co.base_url = learner.base_url() + "/v1";
  co.model = "kgym-policy";
  co.timeout_s = 3600;
  agent::ChatClient policy(co);
  std::unique_ptr<agent::EvalBackend> gym;
  s = MakeGym(cfg["gym"], &gym);
  agent::PromptTemplates templates;
  if (s.ok()) s = agent::PromptTemplates::Load("", &templates);
  agent::RewardFn reward;
  if (s.ok()) s = agent::MakeRewardFn("calculate_reward_speedup", false, &reward);
  if (!s.ok()) return s;
  run.samples = 1;
  run.loop.turns = 1;
  run.loop.sampling.temperature = 0.0;
  run.loop.sampling.top_p = 1.0;
  run.loop.sampling.max_tokens = ev["max_tokens"].get<int>();
  run.loop.eval = EvalTemplate(cfg["gym"]);
  run.loop.eval.num_correct_trials = ev["num_correct_trials"].get<int>();
  run.loop.eval.num_perf_trials = ev["num_perf_trials"].get<int>();
  if (ev["size"].is_string()) run.loop.eval.size = ev["size"].get<std::string>();
  run.loop.model = co.model;
  run.loop.run_id = std::filesystem::path(cfg["trainer"]["out_dir"].get<std::string>()).filename().string() + "-eval";
  run.eval_concurrency = cfg["gym"]["eval_concurrency"].get<int>();
  run.out_dir = out_dir;
  agent::TurnLoopDeps deps;
  deps.llm = &policy;
  deps.eval = gym.get();
  deps.reward = reward;
  deps.templates = &templates;
  std::vector<nlohmann::json> records;
  s = RunRollouts(run, deps, &records);
  learner.Stop();
  if (!s.ok()) return s;
  const nlohmann::json g = grade::Grade(records);
  std::ofstream(out_dir + "/grade.json") << g.dump(2) << "\n";
  *summary = RolloutMetrics(records, nullptr, "eval");
  (*summary)["eval/tasks"] = static_cast<double>(run.tasks.size());
  return Status::Ok();
}

Status RunSft(const nlohmann::json& cfg, bool train, nlohmann::json* summary) {
  const std::string out_dir = cfg["trainer"]["out_dir"].get<std::string>();
  std::filesystem::create_directories(out_dir);
  const std::string config_path = out_dir + "/config.json";
  {
    std::ofstream out(config_path);
    out << cfg.dump(2) << "\n";
    if (!out) return Status::IOError("cannot write " + config_path);
  }
  std::string python;
  if (cfg["learner"]["python"].is_string()) python = cfg["learner"]["python"].get<std::string>();
  if (train) {
    if (cfg["data"]["train_files"].empty()) return Status::InvalidArgument("data.train_files is empty");
    LearnerLaunch placement;
    Status s = LearnerPlacement(cfg["trainer"], &placement);
    if (s.ok()) s = RunLearnerCommand(LearnerInterpreter(python), {"sft", "--config", config_path}, placement);
    if (!s.ok()) return s;
  }
  *summary = nlohmann::json::object();
  if (!cfg["eval"]["tasks"].is_string()) return Status::Ok();
  return GradeModel(cfg, out_dir + "/final", out_dir + "/eval", summary);
}

}  // namespace kgym::train
