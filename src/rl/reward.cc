#include "rl/reward.h"

#include <algorithm>
#include <initializer_list>

namespace kgym::rl {
namespace {

enum class RewardKind { kSpeedup, kWeighted, kLikeKernel, kPaperEq8, kUnknown };

struct RewardName {
  const char* short_name;
  const char* long_name;
  RewardKind kind;
};
constexpr RewardName kRewardNames[] = {
    {"speedup", "calculate_reward_speedup", RewardKind::kSpeedup},
    {"weighted", "calculate_reward_weighted", RewardKind::kWeighted},
    {"like_kernel", "calculate_reward_like_kernel", RewardKind::kLikeKernel},
    {"paper_eq8", "paper_eq8", RewardKind::kPaperEq8},
};

const RewardName* FindRewardName(const std::string& name) {
  for (const RewardName& e : kRewardNames) {
    if (name == e.short_name || name == e.long_name) return &e;
  }
  return nullptr;
}

using nlohmann::json;

bool Truthy(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_number()) return it->get<double>() != 0.0;
  if (it->is_string()) return !it->get_ref<const std::string&>().empty();
  return !it->empty();
}

double Number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0.0;
  return it->get<double>();
}

// The client's _get_field: the first key present in metadata (then at the top level) wins; null -> 0.
double CoverageField(const json& result, std::initializer_list<const char*> keys) {
  static const json kEmpty = json::object();
  auto m = result.find("metadata");
  const json& meta = (m != result.end() && m->is_object()) ? *m : kEmpty;
  for (const char* k : keys) {
    for (const json* scope : {&meta, &result}) {
      auto it = scope->find(k);
      if (it != scope->end()) return it->is_number() ? it->get<double>() : 0.0;
    }
  }
  return 0.0;
}

std::string ErrorOf(const json& result) {
  for (const char* k : {"error_message", "error"}) {
    auto it = result.find(k);
    if (it != result.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) return *it;
  }
  return "Task failed";
}

double LikeKernelTier(double s, const RewardConfig& cfg) {
  if (s >= 3.0) return 1.0;
  if (s >= 2.0) return 0.8;
  if (s >= 1.5) return 0.6;
  if (s >= 1.2) return 0.4;
  if (s >= 1.0) return 0.2;
  return cfg.perf_degrade;
}

}  // namespace

double TimeCoverage(const json& result) {
  double custom = CoverageField(result, {"custom_kernel_cuda_time_in_profiling_us"});
  double total = CoverageField(result, {"total_kernel_run_time_in_profiling_us"});
  return total > 0 ? custom / total : 0.0;
}

double NumberCoverage(const json& result) {
  double custom = CoverageField(result, {"num_custom_kernels", "num_custom_kernel"});
  double total = CoverageField(result, {"num_total_kernels", "num_total_kernel"});
  return total > 0 ? custom / total : 0.0;
}

RewardBreakdown ComputeRewardBreakdown(const json& result, const RewardConfig& cfg) {
  RewardBreakdown b;
  const RewardName* rn = FindRewardName(cfg.name);
  const RewardKind kind = rn ? rn->kind : RewardKind::kUnknown;
  if (kind == RewardKind::kUnknown) {
    b.reward = cfg.penalty_score;
    b.error = "unknown reward function '" + cfg.name + "'";
    return b;
  }
  if (!result.is_object()) {
    b.reward = kind == RewardKind::kLikeKernel ? -1.0 : cfg.penalty_score;
    b.error = "result is not a JSON object";
    return b;
  }
  auto st = result.find("status");
  b.completed = st != result.end() && st->is_string() && *st == "completed";
  const double failure_penalty = kind == RewardKind::kLikeKernel ? -1.0 : cfg.penalty_score;
  if (!b.completed) {
    b.reward = failure_penalty;
    b.error = ErrorOf(result);
    return b;
  }
  if (Truthy(result, "decoy_kernel")) {
    b.decoy_kernel = true;
    b.reward = failure_penalty;
    b.error = "Reward hacking: Decoy kernel detected";
    return b;
  }
  b.compiled = Truthy(result, "compiled");
  b.correctness = Truthy(result, "correctness");
  b.speedup = Number(result, "speedup");
  b.is_speedup_positive = b.speedup >= 1.0 + cfg.speedup_eps;
  if (b.correctness) {
    b.time_coverage = TimeCoverage(result);
    b.number_coverage = NumberCoverage(result);
    b.coverage = cfg.coverage_type == CoverageType::kTime ? b.time_coverage : b.number_coverage;
  }
  const double c = b.correctness ? 1.0 : 0.0;
  const double clipped = std::min(b.speedup, cfg.speedup_reward_upper_bound);
  switch (kind) {
    case RewardKind::kSpeedup: {
      double s_r = clipped < cfg.speedup_reward_lower_bound ? 0.0 : clipped;
      b.reward = cfg.init_correct_weight * c + cfg.init_performance_weight * s_r;
      if (b.correctness && cfg.coverage_enable) b.reward += cfg.coverage_weight * b.coverage;
      break;
    }
    case RewardKind::kWeighted:
      b.reward = cfg.init_correct_weight * c + cfg.init_performance_weight * (b.is_speedup_positive ? 1.0 : 0.0);
      if (b.correctness && cfg.coverage_enable) b.reward += cfg.coverage_weight * b.coverage;
      break;
    case RewardKind::kLikeKernel:
      if (!b.compiled) {
        b.reward = cfg.compilation_fail;
      } else if (!b.correctness) {
        b.reward = cfg.correctness_fail;
      } else {
        b.reward = LikeKernelTier(b.speedup, cfg);
      }
      break;
    case RewardKind::kPaperEq8:
      b.reward = c + c * std::max(0.0, clipped) + c * b.coverage;
      break;
    case RewardKind::kUnknown:
      break;
  }
  return b;
}

double ComputeReward(const json& result, const RewardConfig& cfg) { return ComputeRewardBreakdown(result, cfg).reward; }

json RewardBreakdownToJson(const RewardBreakdown& b) {
  json j = {{"reward", b.reward},
            {"score", b.reward},
            {"speedup", b.speedup},
            {"success", b.compiled && b.correctness},
            {"correctness", b.correctness},
            {"compiled", b.compiled},
            {"decoy_kernel", b.decoy_kernel},
            {"is_speedup_positive", b.is_speedup_positive},
            {"time_coverage", b.time_coverage},
            {"num_coverage", b.number_coverage}};
  if (!b.error.empty()) j["error"] = b.error;
  return j;
}

Status ParseRewardName(const std::string& name, RewardConfig* cfg) {
  const RewardName* rn = FindRewardName(name);
  if (rn == nullptr) {
    return Status::InvalidArgument("unknown reward function '" + name +
                                   "': use speedup | weighted | like_kernel | paper_eq8 (or "
                                   "calculate_reward_speedup | calculate_reward_weighted | "
                                   "calculate_reward_like_kernel)");
  }
  cfg->name = rn->short_name;
  return Status::Ok();
}

}  // namespace kgym::rl
