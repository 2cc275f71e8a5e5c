// KernelBench grading of agent trajectories (research/drkernel.md §5.1, Dr.Kernel's
// compute_kernel_multi_turn_metrics):
//  - a sample is one trajectory; its turns are numbered 1..T globally (test-time scaling included);
//  - abnormal turns (no evaluation metrics: LLM failure, no verdict) are left out of every denominator;
//  - correct = correctness && !decoy_kernel (hacking counts as incorrect); a turn is hacking when it is flagged
//    decoy_kernel (Dr.Kernel's only detector) or its outcome is "hacked" (any family kgym's evaluator catches);
//  - per turn t over the samples with a normal turn t: correctness_rate, compilation_rate, hacking_rate,
//    mean_performance (mean speedup over correct turns), mean_performance_in_all (incorrect = 0),
//    fast@p (share of correct turns with speedup >= p), fast@p_in_all (share of all samples that are correct
//    with speedup >= p; the paper's Fast@p), mean_reward;
//  - best_by_turn_T: per sample the best speedup among its correct turns 1..T (0 if none), over the samples
//    with a normal turn in 1..T: fast@p_in_all = share with best >= p, correctness_rate = share correct anywhere;
//  - final: the last normal turn of each sample;
//  - pass@k (unbiased estimator, averaged over tasks): a sample solves its task when its final turn's reward
//    is >= solve_threshold (0.99: correct and not slower under 0.5C + 0.5 min(s, 3));
//  - hacking ratio: share of evaluated turns flagged decoy, and share of samples with any flagged turn;
//  - everything again per level.
// p uses ">=" (Dr.Kernel), not KernelBench's ">".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kgym::grade {

inline const std::vector<double>& FastThresholds() {
  static const std::vector<double> kP = {1.0, 1.2, 1.5, 2.0, 3.0};
  return kP;
}
// "1", "1.2", "1.5", "2", "3".
std::string ThresholdLabel(double p);

struct GradeOptions {
  double solve_threshold = 0.99;
  std::vector<int> pass_k = {1, 2, 4, 8};  // k larger than a task's sample count are skipped
};

// Grades trajectory records (the agent's run-directory records). The result is a JSON object:
// {"overall": Section, "levels": {level: Section}, "options": {...}} where Section has
//  "num_samples", "num_tasks", "max_turn", "turns": [{turn, n, correctness_rate, ..., fast: {label: x},
//  fast_in_all: {label: x}}], "best_by_turn": [...], "final": {...}, "pass_at_k": {k: x},
//  "hacking_ratio_turns", "hacking_ratio_samples", "mean_speedup", "geomean_speedup", "mean_score",
//  "abnormal_turns", "status_counts".
nlohmann::json Grade(const std::vector<nlohmann::json>& trajectories, const GradeOptions& opt = {});

// Unbiased pass@k for c successes among n samples: 1 - C(n-c, k) / C(n, k).
double PassAtK(int n, int c, int k);

}  // namespace kgym::grade
