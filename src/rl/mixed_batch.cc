#include "rl/mixed_batch.h"

#include <cmath>
#include <string>
#include <vector>

#include "rl/advantage.h"

namespace kgym::rl {

Status WeightedLeaveOneOut(const OutcomePart& part, double weight, double* adv) {
  if (part.size == 0) return Status::Ok();
  if (part.group == nullptr || part.reward == nullptr) {
    return Status::InvalidArgument("leave-one-out: group and reward are required");
  }
  int64_t groups = 0;
  for (size_t i = 0; i < part.size; ++i) {
    if (part.group[i] < 0) return Status::InvalidArgument("leave-one-out: negative group at row " + std::to_string(i));
    groups = part.group[i] + 1 > groups ? part.group[i] + 1 : groups;
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(groups), 0);
  for (size_t i = 0; i < part.size; ++i) {
    sum[static_cast<size_t>(part.group[i])] += part.reward[i];
    ++count[static_cast<size_t>(part.group[i])];
  }
  for (size_t i = 0; i < part.size; ++i) {
    const size_t g = static_cast<size_t>(part.group[i]);
    const int64_t n = count[g];
    const double baseline = n > 1 ? (sum[g] - part.reward[i]) / static_cast<double>(n - 1) : 0.0;
    adv[i] = (part.reward[i] - baseline) * weight;
  }
  return Status::Ok();
}

Status MixedBatchAdvantages(const PolicyPart& policy, const OutcomePart& selection, const OutcomePart& summary,
                            const MixedBatchOptions& opt, double* policy_returns, double* policy_adv,
                            double* selection_adv, double* summary_adv) {
  if (policy.rows.size > 0) {
    AdvantageOptions ao;
    ao.estimator = Estimator::kTrloo;
    ao.gamma = opt.gamma;
    ao.num_groups = policy.num_groups;
    if (Status s = ComputeAdvantages(policy.rows, policy.rewards, policy.loss_mask, ao, policy_returns, policy_adv);
        !s.ok()) {
      return s;
    }
    if (opt.cross_scheme_norm) {
      const TurnRows& rows = policy.rows;
      int64_t groups = 0;
      for (size_t i = 0; i < rows.size; ++i) groups = rows.group[i] + 1 > groups ? rows.group[i] + 1 : groups;
      std::vector<double> abs_sum(static_cast<size_t>(groups), 0.0), tokens(static_cast<size_t>(groups), 0.0);
      auto valid = [&](size_t i) { return rows.turn[i] > 0 && (policy.loss_mask == nullptr || policy.loss_mask[i]); };
      for (size_t i = 0; i < rows.size; ++i) {
        if (!valid(i)) continue;
        const double w = policy.token_count ? static_cast<double>(policy.token_count[i]) : 1.0;
        abs_sum[static_cast<size_t>(rows.group[i])] += std::fabs(policy_adv[i]) * w;
        tokens[static_cast<size_t>(rows.group[i])] += w;
      }
      for (size_t i = 0; i < rows.size; ++i) {
        const size_t g = static_cast<size_t>(rows.group[i]);
        const double mean_abs = tokens[g] > 0 ? abs_sum[g] / tokens[g] : 0.0;
        policy_adv[i] /= (mean_abs + 1e-8);
      }
    }
  }
  if (Status s = WeightedLeaveOneOut(selection, opt.selection_weight, selection_adv); !s.ok()) return s;
  return WeightedLeaveOneOut(summary, opt.summary_weight, summary_adv);
}

}  // namespace kgym::rl
