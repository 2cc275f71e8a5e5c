// JSON Lines rows (one object per turn) <-> the flat arrays of kgym::rl, for `kgym rl ...` and tests.
// Each Run* function reads its fields from every row, computes, and adds its output fields to the same rows
// (input order is kept; rows may come in any order — they are grouped by trajectory and sorted by turn
// internally). Field errors name the row (1-based line number) and the field.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.h"
#include "rl/advantage.h"
#include "rl/group_filter.h"
#include "rl/mismatch.h"
#include "rl/profiling_rejection.h"
#include "rl/reward.h"

namespace kgym::rl {

using JsonRows = std::vector<nlohmann::json>;

// Blank lines are skipped; every other line must be a JSON object.
Status ReadJsonLines(std::istream& in, JsonRows* rows);

// In: uid (prompt group), traj, turn (1-based; <= 0 padding), reward, loss_mask (0|1, default 1).
// Out: + "return", "advantage" (0 for masked and padding rows). With mask_void_turns the void-turn rule is
// applied first and the row's "loss_mask" is rewritten.
Status RunAdvantages(JsonRows* rows, const AdvantageOptions& opt, bool mask_void_turns);

// In: traj, turn, logp_train [..], logp_rollout [..], optional mask [..] and loss_mask (0 masks every token).
// Out: + "ratio", "keep" (0|1); the token level adds "token_keep" [..].
Status RunMismatch(JsonRows* rows, const MrsOptions& opt);

// In: coverage, correct (bool or 0|1), optional speedup; traj and turn for the geometric level.
// Out: + "keep_prob", "keep". Row i (input order) uses the draw PrsUniform(seed, i).
Status RunProfilingRejection(JsonRows* rows, const PrsOptions& opt);

// In: uid, traj, turn, reward, loss_mask (default 1). Out: + "group_keep" (0|1).
Status RunGroupFilter(JsonRows* rows, const GroupFilterOptions& opt);

// In: KernelGYM result objects. Out: + "reward" and "reward_detail" (RewardBreakdownToJson).
Status RunReward(JsonRows* rows, const RewardConfig& cfg);

}  // namespace kgym::rl
