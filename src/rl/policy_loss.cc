#include "rl/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kgym::rl {

Status DualClipPolicyLoss(size_t rows, const int64_t* offsets, const double* logp, const double* old_logp,
                          const uint8_t* token_mask, const double* advantages, const PolicyLossOptions& opt,
                          PolicyLossResult* out, double* token_loss) {
  if (!(opt.clip_ratio_c > 1.0)) return Status::InvalidArgument("policy loss: clip_ratio_c must be > 1");
  if (opt.loss_scale_factor == 0.0) return Status::InvalidArgument("policy loss: loss_scale_factor must not be 0");
  if (rows > 0 && (offsets == nullptr || offsets[0] != 0)) {
    return Status::InvalidArgument("policy loss: offsets (rows + 1 entries, starting at 0) are required");
  }
  PolicyLossResult r;
  double row_loss_sum = 0.0, kl = 0.0, lower = 0.0, upper = 0.0, dual = 0.0;
  for (size_t i = 0; i < rows; ++i) {
    if (offsets[i + 1] < offsets[i])
      return Status::InvalidArgument("policy loss: offsets decrease at row " + std::to_string(i));
    const double a = advantages[i];
    double row_sum = 0.0;
    int64_t valid = 0;
    for (int64_t j = offsets[i]; j < offsets[i + 1]; ++j) {
      if (token_mask != nullptr && !token_mask[j]) {
        if (token_loss) token_loss[j] = 0.0;
        continue;
      }
      const double log_ratio = logp[j] - old_logp[j];
      const double ratio = std::exp(log_ratio);
      const double l1 = -a * ratio;
      const double l2 = -a * std::clamp(ratio, 1.0 - opt.clip_low, 1.0 + opt.clip_high);
      const double clipped = std::max(l1, l2);
      const double l3 = -a * opt.clip_ratio_c;
      const double loss = a < 0 ? std::min(l3, clipped) : clipped;
      const bool dual_on = a < 0 && l3 < clipped;
      const bool up = ratio > 1.0 + opt.clip_high && !dual_on;
      const bool low = ratio < 1.0 - opt.clip_low || dual_on;
      upper += up ? 1.0 : 0.0;
      lower += low ? 1.0 : 0.0;
      dual += dual_on ? 1.0 : 0.0;
      kl += -log_ratio;
      row_sum += loss;
      ++valid;
      if (token_loss) token_loss[j] = loss;
    }
    if (valid > 0) {
      row_loss_sum += row_sum;
      ++r.rows_in_loss;
      r.tokens_in_loss += valid;
    }
  }
  if (r.rows_in_loss > 0) r.loss = row_loss_sum / static_cast<double>(r.rows_in_loss) / opt.loss_scale_factor;
  if (r.tokens_in_loss > 0) {
    const double t = static_cast<double>(r.tokens_in_loss);
    r.ppo_kl = kl / t;
    r.clip_fraction_lower = lower / t;
    r.clip_fraction_upper = upper / t;
    r.clip_fraction_dual = dual / t;
    r.clip_fraction = (lower + upper) / t;
  }
  *out = r;
  return Status::Ok();
}

}  // namespace kgym::rl
