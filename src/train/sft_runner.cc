#include "train/sft_runner.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "grade/metrics.h"
#include "run/run_builder.h"
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
  run::RunSpec spec;
  if (s.ok()) s = GradeRunSpec(cfg, &spec);
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
  spec.llm.base_url = learner.base_url() + "/v1";
  spec.llm.model = "kgym-policy";
  spec.loop.run_id = std::filesystem::path(cfg["trainer"]["out_dir"].get<std::string>()).filename().string() + "-eval";
  std::unique_ptr<run::RunParts> parts;
  s = run::RunParts::Build(spec, &parts);
  if (!s.ok()) return s;
  run.samples = spec.loop.samples;
  run.loop = parts->loop();
  run.eval_concurrency = spec.gym.eval_concurrency;
  run.out_dir = out_dir;
  std::vector<nlohmann::json> records;
  s = RunRollouts(run, parts->Deps(), &records);
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
    placement.config_path = config_path;
    if (s.ok()) s = RunLearnerCommand(python, {"sft", "--config", config_path}, placement);
    if (!s.ok()) return s;
    if (!std::filesystem::exists(out_dir + "/final")) {  // stopped by trainer.time_budget_s: no final model yet
      std::fprintf(stderr,
                   "kgym sft: stopped before the last step (trainer.time_budget_s); the same command again "
                   "continues from the newest checkpoint\n");
      *summary = {{"stopped", true}};
      return Status::Ok();
    }
  }
  *summary = nlohmann::json::object();
  if (!cfg["eval"]["tasks"].is_string()) return Status::Ok();
  return GradeModel(cfg, out_dir + "/final", out_dir + "/eval", summary);
}

}  // namespace kgym::train
