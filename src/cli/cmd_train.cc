// `kgym sft` and `kgym train`: the SFT cold start and Dr.Kernel's RL loop, with the gradient step in the learner
// (python/kgym_train). Configuration: --config FILE (YAML or JSON) over the documented defaults
// (python/kgym_train/configs/{sft,rl}.yaml), then key=value overrides. See src/train/.
#include <cstdio>
#include <memory>

#include "cli/command_registry.h"
#include "train/rl_trainer.h"
#include "train/sft_runner.h"
#include "train/train_config.h"

namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  bool print_config = false, print_defaults = false, grade_only = false;
};

void AddCommon(CLI::App* sub, TrainArgs* a) {
  sub->add_option("--config", a->config, "configuration file (YAML or JSON) over the defaults");
  sub->add_option("overrides", a->overrides, "key=value overrides, e.g. actor.optim.lr=1e-5 rollout.n=8");
  sub->add_flag("--print-config", a->print_config, "print the resolved configuration (JSON) and exit");
  sub->add_flag("--print-defaults", a->print_defaults, "print the documented defaults (YAML) and exit");
}

int Resolve(const char* name, kgym::train::ConfigKind kind, const TrainArgs& a, nlohmann::json* cfg) {
  if (a.print_defaults) {
    std::fputs(kgym::train::DefaultConfigYaml(kind).c_str(), stdout);
    return 0;
  }
  kgym::Status s = kgym::train::LoadTrainConfig(kind, a.config, a.overrides, cfg);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym %s: %s\n", name, s.ToString().c_str());
    return 2;
  }
  if (a.print_config) {
    std::printf("%s\n", cfg->dump(2).c_str());
    return 0;
  }
  return -1;
}

int RunSftCommand(const TrainArgs& a) {
  nlohmann::json cfg;
  if (int rc = Resolve("sft", kgym::train::ConfigKind::kSft, a, &cfg); rc >= 0) return rc;
  nlohmann::json summary;
  kgym::Status s = kgym::train::RunSft(cfg, !a.grade_only, &summary);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym sft: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!summary.empty()) std::printf("%s\n", summary.dump(2).c_str());
  return 0;
}

int RunTrainCommand(const TrainArgs& a) {
  nlohmann::json cfg;
  if (int rc = Resolve("train", kgym::train::ConfigKind::kRl, a, &cfg); rc >= 0) return rc;
  kgym::train::RlTrainer trainer(cfg);
  kgym::Status s = trainer.Run();
  if (!s.ok()) {
    std::fprintf(stderr, "kgym train: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

KGYM_REGISTER_COMMAND("sft", "SFT cold start of a policy on multi-turn conversations, then gym grading",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto a = std::make_shared<TrainArgs>();
                        AddCommon(sub, a.get());
                        sub->add_flag("--grade-only", a->grade_only,
                                      "skip training: grade <trainer.out_dir>/final on eval.tasks");
                        return [a] { return RunSftCommand(*a); };
                      });

KGYM_REGISTER_COMMAND("train", "RL on gym rewards: TRLOO + MRS + PR + PRS with the learner's PPO step",
                      [](CLI::App* sub) -> kgym::cli::CommandRunner {
                        auto a = std::make_shared<TrainArgs>();
                        AddCommon(sub, a.get());
                        return [a] { return RunTrainCommand(*a); };
                      });

}  // namespace
