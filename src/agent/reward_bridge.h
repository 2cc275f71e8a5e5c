// The agent's reward: Dr.Kernel's reward functions from src/rl (kgym::rl::ComputeReward), selected by name
// (calculate_reward_speedup | calculate_reward_weighted | calculate_reward_like_kernel, with their defaults).
#pragma once

#include <string>

#include "agent/turn_loop.h"
#include "core/status.h"

namespace kgym::agent {

// Builds the reward function named `name` with Dr.Kernel's defaults; `coverage` turns the profiling-coverage
// term on (the RL recipe) or off (the eval scripts). Fails on an unknown name.
Status MakeRewardFn(const std::string& name, bool coverage, RewardFn* out);

}  // namespace kgym::agent
