// Per-turn rewards from a KernelGYM-schema evaluation result (research/drkernel.md §1).
//
// Three reward functions of the released Dr.Kernel reward client, selected by name, plus the paper's Eq. 8:
//  - "speedup" (calculate_reward_speedup, the RL recipe's and the eval scripts' choice):
//      status != "completed" or decoy_kernel -> penalty_score;
//      else s_r = min(speedup or 0, upper); s_r = 0 when s_r < lower;
//      R = correct_weight·C + performance_weight·s_r (+ coverage_weight·coverage when C and coverage enabled).
//  - "weighted" (calculate_reward_weighted): the speedup term is binary, [speedup >= 1 + speedup_eps].
//  - "like_kernel" (calculate_reward_like_kernel, the client's fallback): non-completed / decoy -> -1;
//      not compiled -> compilation_fail; incorrect -> correctness_fail; else tiered on speedup
//      (>=3: 1.0, >=2: 0.8, >=1.5: 0.6, >=1.2: 0.4, >=1: 0.2, else perf_degrade). No coverage term.
//  - "paper_eq8": the paper's R = C + C·min(s, upper) + C·PR (no weights; the code's recipe is exactly 0.5×
//      this, and TRLOO does not normalise, so the scale matters).
// The server reports speedup 0 for incorrect kernels, so the speedup term is implicitly multiplied by C; the
// functions do not multiply it themselves (like the code). Coverage (the PR term) is read like the client
// does: each field from `metadata` first, then the top level, the first key present wins, null counts as 0:
//   time_coverage   = custom_kernel_cuda_time_in_profiling_us / total_kernel_run_time_in_profiling_us
//   number_coverage = num_custom_kernels|num_custom_kernel / num_total_kernels|num_total_kernel   (0 if /0).
// The defaults are those of the released RL recipe (8b/14b_trloo_mrs_pr_prs.sh): 0.5/0.5, bounds [0, 3],
// coverage on with weight 0.5 on time_coverage. The eval scripts turn coverage off (coverage_enable=false).
// Not done here (the caller's job): the one re-evaluation when speedup > upper bound (an anomaly re-run).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace kgym::rl {

enum class CoverageType { kTime, kNumber };

struct RewardConfig {
  std::string name = "speedup";  // any name ParseRewardName accepts
  double init_correct_weight = 0.5;
  double init_performance_weight = 0.5;
  double speedup_reward_upper_bound = 3.0;
  double speedup_reward_lower_bound = 0.0;  // train_rl_common.sh defaults to 1.0; the recipe passes 0.0
  double speedup_eps = 0.01;                // "weighted": speedup counts when >= 1 + eps
  double penalty_score = 0.0;               // non-completed / decoy, "speedup" and "weighted"
  bool coverage_enable = true;              // the recipe's value; kernel_trainer.yaml and eval use false
  double coverage_weight = 0.5;             // yaml default 0.25
  CoverageType coverage_type = CoverageType::kTime;
  // "like_kernel" only.
  double compilation_fail = -0.5;
  double correctness_fail = -0.3;
  double perf_degrade = -0.1;
};

// What a reward was made of; the fields the reward manager logs per turn (reward_extra_info).
struct RewardBreakdown {
  double reward = 0.0;
  double speedup = 0.0;    // the result's speedup (0 when absent or not completed)
  bool completed = false;  // status == "completed"
  bool compiled = false;
  bool correctness = false;  // as reported; decoy turns report false
  bool decoy_kernel = false;
  bool is_speedup_positive = false;  // speedup >= 1 + speedup_eps
  double time_coverage = 0.0;        // computed for correct turns only (else 0), unrounded
  double number_coverage = 0.0;
  double coverage = 0.0;  // the one of the two that coverage_type selects
  std::string error;      // why the reward is a penalty, empty otherwise
};

// `result` is a KernelGYM-schema result JSON (status, correctness, speedup, decoy_kernel, compiled,
// metadata{...}). Missing or null fields count as false / 0. Never fails: an unknown cfg.name gives
// penalty_score with the reason in RewardBreakdown::error (validate names up front with ParseRewardName).
double ComputeReward(const nlohmann::json& result, const RewardConfig& cfg);
RewardBreakdown ComputeRewardBreakdown(const nlohmann::json& result, const RewardConfig& cfg);

// The breakdown as the reward client's summary keys: reward, score, speedup, success, correctness,
// compiled, decoy_kernel, is_speedup_positive, time_coverage, num_coverage, error (when set).
nlohmann::json RewardBreakdownToJson(const RewardBreakdown& b);

// "speedup" | "weighted" | "like_kernel" | "paper_eq8", or the client's long names calculate_reward_speedup |
// calculate_reward_weighted | calculate_reward_like_kernel. Sets cfg->name to the canonical short name and
// leaves the knobs alone. Unknown names fail (the Python client silently fell back to like_kernel).
Status ParseRewardName(const std::string& name, RewardConfig* cfg);

// time_coverage / number_coverage of a result as the client computes them (whatever its correctness).
double TimeCoverage(const nlohmann::json& result);
double NumberCoverage(const nlohmann::json& result);

}  // namespace kgym::rl
