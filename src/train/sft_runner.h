// `kgym sft`: the SFT cold start in the learner (python -m kgym_train sft over the resolved config), then, when
// eval.tasks is set, the trained model graded by the gym: its greedy first-turn answer to every task (one sample,
// temperature 0, served by the learner from <out_dir>/final), written to <out_dir>/eval/ (trajectories.jsonl and
// grade.json, Dr.Kernel's metrics).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace kgym::train {

// `summary` gets the grading's headline numbers (empty without eval.tasks). With `train` false only the grading
// runs (on <out_dir>/final). A training run stopped by trainer.time_budget_s (no <out_dir>/final) is not graded:
// `summary` is {"stopped": true} and the same call again continues from the newest checkpoint.
Status RunSft(const nlohmann::json& cfg, bool train, nlohmann::json* summary);

// Greedy first-turn outputs of the model in `model_dir`, graded on the config's eval.tasks.
Status GradeModel(const nlohmann::json& cfg, const std::string& model_dir, const std::string& out_dir,
                  nlohmann::json* summary);

}  // namespace kgym::train
