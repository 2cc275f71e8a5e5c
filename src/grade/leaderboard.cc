#include "grade/leaderboard.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/evaluation.h"

namespace kgym::grade {

namespace {
struct TaskRow {
  std::string level;
  int samples = 0, correct_samples = 0, hacked_turns = 0, best_turn = 0;
  double best_speedup = 0, final_reward_sum = 0;
  int final_rewards = 0;
};

const nlohmann::json& ResultOf(const nlohmann::json& turn) {
  static const nlohmann::json kNone = nlohmann::json::object();
  return turn.contains("result") && turn["result"].is_object() ? turn["result"] : kNone;
}

bool Correct(const nlohmann::json& r) { return r.value("correctness", false) && !r.value("decoy_kernel", false); }

// Folds one trajectory into its task's row.
void Add(const nlohmann::json& rec, TaskRow* row) {
  row->samples++;
  if (row->level.empty()) row->level = rec.value("level", "");
  if (!rec.contains("turns") || !rec["turns"].is_array()) return;
  bool any_correct = false;
  const nlohmann::json* last_reward = nullptr;
  int index = 0;
  for (const auto& t : rec["turns"]) {
    ++index;
    const auto& r = ResultOf(t);
    if (r.value("outcome", "") == "hacked" || r.value("decoy_kernel", false)) row->hacked_turns++;
    if (t.contains("reward") && t["reward"].is_number()) last_reward = &t["reward"];
    if (!Correct(r)) continue;
    any_correct = true;
    double s = r.value("speedup", 0.0);
    if (s > row->best_speedup) {
      row->best_speedup = s;
      row->best_turn = t.value("turn", index);
    }
  }
  row->correct_samples += any_correct;
  if (last_reward) {
    row->final_reward_sum += last_reward->get<double>();
    row->final_rewards++;
  }
}
}  // namespace

nlohmann::json Leaderboard(const std::vector<nlohmann::json>& trajectories) {
  std::map<std::string, TaskRow> tasks;
  for (const auto& rec : trajectories) Add(rec, &tasks[rec.value("task_id", "")]);
  std::vector<std::pair<std::string, TaskRow>> rows(tasks.begin(), tasks.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.best_speedup != b.second.best_speedup) return a.second.best_speedup > b.second.best_speedup;
    return a.second.correct_samples > b.second.correct_samples;
  });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [task, r] : rows)
    out.push_back({{"task_id", task},
                   {"level", r.level},
                   {"samples", r.samples},
                   {"correct_samples", r.correct_samples},
                   {"best_speedup", r.best_speedup},
                   {"best_turn", r.best_turn > 0 ? nlohmann::json(r.best_turn) : nlohmann::json()},
                   {"mean_final_reward",
                    r.final_rewards ? nlohmann::json(r.final_reward_sum / r.final_rewards) : nlohmann::json()},
                   {"hacked_turns", r.hacked_turns}});
  return out;
}

nlohmann::json HackFamilies(const std::vector<nlohmann::json>& trajectories) {
  std::map<std::string, int> counts;
  for (const auto& rec : trajectories) {
    if (!rec.contains("turns") || !rec["turns"].is_array()) continue;
    for (const auto& t : rec["turns"]) {
      const auto& r = ResultOf(t);
      if (r.value("outcome", "") != "hacked") continue;
      const auto& detail = r.value("outcome_detail", nlohmann::json());
      std::string family = detail.is_string() ? HackFamily(detail.get<std::string>()) : "";
      counts[family.empty() ? "unnamed" : family]++;
    }
  }
  return counts;
}

}  // namespace kgym::grade
