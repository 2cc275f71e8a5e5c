// Built when src/rl (kgym_rl) is present.
#include "agent/reward_bridge.h"
#include "rl/reward.h"

namespace kgym::agent {

bool RewardsAvailable() { return true; }

Status MakeRewardFn(const std::string& name, bool coverage, RewardFn* out) {
  rl::RewardConfig cfg;
  Status s = rl::ParseRewardName(name, &cfg);
  if (!s.ok()) return s;
  cfg.coverage_enable = coverage;
  *out = [cfg](const nlohmann::json& result) {
    return rl::RewardBreakdownToJson(rl::ComputeRewardBreakdown(result, cfg));
  };
  return Status::Ok();
}

}  // namespace kgym::agent
