// Built when src/rl is absent.
#include "agent/reward_bridge.h"

namespace kgym::agent {

bool RewardsAvailable() { return false; }

Status MakeRewardFn(const std::string&, bool, RewardFn*) {
  return Status::Unavailable("this kgym was built without kgym_rl (src/rl/reward.h); rewards are unavailable");
}

}  // namespace kgym::agent
