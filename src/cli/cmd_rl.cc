// `kgym rl advantages|mrs|prs|filter|reward`: the RL core over JSON Lines (one row per turn in, the same rows
// with the computed fields added out, in input order). Exit 0 on success, 1 on bad input (the message names
// the row and field), 2 on usage errors.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command_registry.h"
#include "cli/shared_flags.h"
#include "rl/jsonl_rows.h"
#include "run/run_params.h"

namespace {

using kgym::Status;
using namespace kgym::rl;

struct RlFlags {
  std::string in = "-", out = "-";
  // advantages
  std::string estimator = "trloo";
  double gamma = 1.0;
  bool mask_void = false;
  // mrs
  std::string level = "geometric", veto_scope = "turn";
  double lower = 0.999, upper = 1.001, veto = 1e-4;
  // prs
  double threshold = 0.3, factor = 0.1, speedup_threshold = -1.0;
  uint64_t seed = 0;
  int round_decimals = 2;
  std::string prs_level = "turn";
  // filter
  double min_std = 1e-3;
  int64_t min_group_size = 1;
  bool all_turns = false;
  // reward
  std::string reward_fn = "speedup", coverage_type = "time_coverage";
  bool coverage = true;  // on here (rows are scored as the RL recipe does); the agent's --reward-coverage is off
  double coverage_weight = 0.5, upper_bound = 3.0, lower_bound = 0.0;
};

Status Read(const std::string& path, JsonRows* rows) {
  if (path == "-") return ReadJsonLines(std::cin, rows);
  std::ifstream f(path);
  if (!f) return Status::IOError("cannot open " + path);
  return ReadJsonLines(f, rows);
}

Status Write(const std::string& path, const JsonRows& rows) {
  std::ofstream file;
  std::ostream* os = &std::cout;
  if (path != "-") {
    file.open(path);
    if (!file) return Status::IOError("cannot write " + path);
    os = &file;
  }
  for (const auto& r : rows) *os << r.dump() << '\n';
  os->flush();
  return *os ? Status::Ok() : Status::IOError("write failed: " + path);
}

void AddIo(CLI::App* c, RlFlags* f) {
  c->add_option("--in", f->in, "input JSON Lines file ('-' = stdin)");
  kgym::cli::AddSharedOption(c, "--out", &f->out, "JSON Lines; '-' = stdout");
}

int Run(const RlFlags& f, const std::function<Status(JsonRows*)>& fn) {
  JsonRows rows;
  Status s = Read(f.in, &rows);
  if (s.ok()) s = fn(&rows);
  if (s.ok()) s = Write(f.out, rows);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym rl: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

KGYM_REGISTER_COMMAND(
    "rl", "RL core over JSON Lines: advantages, mrs, prs, filter, reward",
    [](CLI::App* sub) -> kgym::cli::CommandRunner {
      auto f = std::make_shared<RlFlags>();
      sub->require_subcommand(1);

      CLI::App* adv =
          sub->add_subcommand("advantages", "returns and advantages; rows {uid, traj, turn, reward, loss_mask}");
      AddIo(adv, f.get());
      adv->add_option("--estimator", f->estimator,
                      "trloo | grpo | turn_independent_grpo | rloo | erloo | erloo_norm | reinforce");
      adv->add_option("--gamma", f->gamma, "discount across turns (Dr.Kernel: 1)");
      adv->add_flag("--mask-void-turns", f->mask_void, "apply the void-turn loss mask first (rewrites loss_mask)");

      CLI::App* mrs = sub->add_subcommand("mrs", "mismatch rejection; rows {traj, turn, logp_train, logp_rollout}");
      AddIo(mrs, f.get());
      mrs->add_option("--lower", f->lower, "lower bound of the ratio");
      mrs->add_option("--upper", f->upper, "upper bound of the ratio");
      mrs->add_option("--veto", f->veto, "token veto threshold on pi_train/pi_rollout (<= 0: off)");
      kgym::cli::AddSharedOption(mrs, "--level", &f->level, "geometric | token | turn | turn_geo | sequence");
      mrs->add_option("--veto-scope", f->veto_scope, "turn (code) | trajectory (paper)")
          ->check(CLI::IsMember({"turn", "trajectory"}));

      CLI::App* prs = sub->add_subcommand("prs", "profiling rejection; rows {coverage, correct}");
      AddIo(prs, f.get());
      prs->add_option("--threshold", f->threshold, "coverage threshold tau");
      prs->add_option("--factor", f->factor, "soft ramp width s (<= 0: hard threshold)");
      kgym::cli::AddSharedOption(prs, "--seed", &f->seed, "of the Bernoulli draws");
      prs->add_option("--speedup-threshold", f->speedup_threshold, "also keep rows with speedup >= this (< 0: off)");
      prs->add_option("--round", f->round_decimals, "round coverage to this many decimals first (code: 2; < 0: off)");
      kgym::cli::AddSharedOption(prs, "--level", &f->prs_level, "turn | geometric (needs traj, turn)");

      CLI::App* flt = sub->add_subcommand("filter", "zero-variance group filter; rows {uid, traj, turn, reward}");
      AddIo(flt, f.get());
      flt->add_option("--min-std", f->min_std, "drop a group whose last-turn rewards have std below this");
      flt->add_option("--min-group-size", f->min_group_size, "drop groups with fewer rewards than this");
      flt->add_flag("--all-turns", f->all_turns, "use every valid turn instead of the last turn of each rollout");

      CLI::App* rew = sub->add_subcommand("reward", "Dr.Kernel reward of KernelGYM result rows");
      AddIo(rew, f.get());
      // The names of the run parameters (run/run_params.h): --reward and --reward-coverage mean here what they mean
      // in `kgym agent`; only the defaults differ (coverage on: the RL recipe's rows).
      kgym::cli::AddSharedOption(rew, "--reward", &f->reward_fn,
                                 "speedup | weighted | like_kernel | paper_eq8 (or calculate_reward_*)");
      rew->add_flag("--reward-coverage,!--no-reward-coverage", f->coverage,
                    kgym::cli::FlagConcept("--reward-coverage") +
                        ": on here by default; --no-reward-coverage drops it (the eval scripts' setting)");
      // Old names (issue 38: one name per concept in `kgym rl`).
      kgym::run::AddOldFlag(rew, "--fn", "--reward", &f->reward_fn);
      rew->add_flag_callback(
             "--no-coverage",
             [rew, f] {
               f->coverage = false;
               kgym::run::SayNewName(rew, "--no-coverage", "--no-reward-coverage", "");
             },
             "old name of --reward-coverage (given as --no-reward-coverage)")
          ->group("");
      rew->add_option("--coverage-weight", f->coverage_weight, "weight of the coverage term");
      rew->add_option("--coverage-type", f->coverage_type, "time_coverage | number_coverage")
          ->check(CLI::IsMember({"time_coverage", "number_coverage"}));
      rew->add_option("--upper-bound", f->upper_bound, "speedup_reward_upper_bound");
      rew->add_option("--lower-bound", f->lower_bound, "speedup_reward_lower_bound");

      return [=]() -> int {
        if (adv->parsed()) {
          AdvantageOptions o;
          o.gamma = f->gamma;
          if (Status s = ParseEstimator(f->estimator, &o.estimator); !s.ok()) {
            std::fprintf(stderr, "kgym rl: %s\n", s.message().c_str());
            return 2;
          }
          return Run(*f, [&](JsonRows* rows) { return RunAdvantages(rows, o, f->mask_void); });
        }
        if (mrs->parsed()) {
          MrsOptions o;
          o.lower = f->lower;
          o.upper = f->upper;
          o.veto = f->veto;
          o.veto_scope = f->veto_scope == "trajectory" ? VetoScope::kTrajectory : VetoScope::kTurn;
          if (Status s = ParseMrsLevel(f->level, &o.level); !s.ok()) {
            std::fprintf(stderr, "kgym rl: %s\n", s.message().c_str());
            return 2;
          }
          return Run(*f, [&](JsonRows* rows) { return RunMismatch(rows, o); });
        }
        if (prs->parsed()) {
          PrsOptions o;
          o.threshold = f->threshold;
          o.factor = f->factor;
          o.seed = f->seed;
          o.speedup_threshold = f->speedup_threshold;
          o.round_decimals = f->round_decimals;
          if (Status s = ParsePrsLevel(f->prs_level, &o.level); !s.ok()) {
            std::fprintf(stderr, "kgym rl: %s\n", s.message().c_str());
            return 2;
          }
          return Run(*f, [&](JsonRows* rows) { return RunProfilingRejection(rows, o); });
        }
        if (flt->parsed()) {
          GroupFilterOptions o;
          o.min_std = f->min_std;
          o.min_group_size = f->min_group_size;
          o.last_turn_only = !f->all_turns;
          return Run(*f, [&](JsonRows* rows) { return RunGroupFilter(rows, o); });
        }
        if (rew->parsed()) {
          RewardConfig c;
          if (Status s = ParseRewardName(f->reward_fn, &c); !s.ok()) {
            std::fprintf(stderr, "kgym rl: %s\n", s.message().c_str());
            return 2;
          }
          c.coverage_enable = f->coverage;
          c.coverage_weight = f->coverage_weight;
          c.coverage_type = f->coverage_type == "number_coverage" ? CoverageType::kNumber : CoverageType::kTime;
          c.speedup_reward_upper_bound = f->upper_bound;
          c.speedup_reward_lower_bound = f->lower_bound;
          return Run(*f, [&](JsonRows* rows) { return RunReward(rows, c); });
        }
        return 2;
      };
    });

}  // namespace
