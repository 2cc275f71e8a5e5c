// The agent's reward through kgym_rl.
#include "agent/reward_bridge.h"
#include "rl/reward.h"

namespace kgym::agent {

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
