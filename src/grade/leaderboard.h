// Per-task views of agent trajectories, beside the per-turn metrics of grade/metrics.h.
//  - Leaderboard: one row per task, best first: samples, samples with a correct turn, best speedup of a correct
//    turn (0 if none), the turn that first reached it, mean final reward, hacked turns. Sorted by best speedup,
//    then correct samples, then task id.
//  - HackFamilies: turns whose verdict was "hacked", counted by the family named in outcome_detail
//    ("hacked (FAMILY): ...", the evaluator's wording; "unnamed" when it names none).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace kgym::grade {

nlohmann::json Leaderboard(const std::vector<nlohmann::json>& trajectories);
nlohmann::json HackFamilies(const std::vector<nlohmann::json>& trajectories);

}  // namespace kgym::grade
