#include "rl/policy_loss.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kgym::rl {
namespace {

TEST(PolicyLoss, DualClipCasesAndSeqMeanTokenSum) {
  // Row 0 (A = +1): ratios 1.0 (loss -1), e^0.5 = 1.65 (clipped to 1.28: loss -1.28).
  // Row 1 (A = -1): ratio e^2 = 7.39 -> max(7.39, 1.28) = 7.39, dual-clipped to 3; ratio 0.5 -> max(0.5, 0.8) = 0.8.
  // Row 2: no valid token (not in the mean).
  std::vector<int64_t> off = {0, 2, 4, 5};
  std::vector<double> old = {0, 0, 0, 0, 0};
  std::vector<double> logp = {0, 0.5, 2.0, std::log(0.5), 0};
  std::vector<uint8_t> mask = {1, 1, 1, 1, 0};
  std::vector<double> adv = {1.0, -1.0, 5.0};
  PolicyLossOptions opt;
  opt.loss_scale_factor = 1.0;
  PolicyLossResult r;
  std::vector<double> tl(5);
  ASSERT_TRUE(
      DualClipPolicyLoss(3, off.data(), logp.data(), old.data(), mask.data(), adv.data(), opt, &r, tl.data()).ok());
  EXPECT_NEAR(tl[0], -1.0, 1e-12);
  EXPECT_NEAR(tl[1], -1.28, 1e-12);
  EXPECT_NEAR(tl[2], 3.0, 1e-12);
  EXPECT_NEAR(tl[3], 0.8, 1e-12);
  EXPECT_EQ(tl[4], 0.0);
  EXPECT_EQ(r.rows_in_loss, 2);
  EXPECT_NEAR(r.loss, ((-1.0 - 1.28) + (3.0 + 0.8)) / 2, 1e-12);
  EXPECT_NEAR(r.clip_fraction_dual, 0.25, 1e-12);
  EXPECT_NEAR(r.clip_fraction_upper, 0.25, 1e-12);  // token 1
  EXPECT_NEAR(r.clip_fraction_lower, 0.5, 1e-12);   // token 2 (dual) and token 3 (ratio < 0.8)
  opt.loss_scale_factor = 1000.0;
  PolicyLossResult scaled;
  ASSERT_TRUE(DualClipPolicyLoss(3, off.data(), logp.data(), old.data(), mask.data(), adv.data(), opt, &scaled).ok());
  EXPECT_NEAR(scaled.loss, r.loss / 1000.0, 1e-15);
  opt.clip_ratio_c = 1.0;
  EXPECT_FALSE(DualClipPolicyLoss(3, off.data(), logp.data(), old.data(), mask.data(), adv.data(), opt, &r).ok());
}

}  // namespace
}  // namespace kgym::rl
