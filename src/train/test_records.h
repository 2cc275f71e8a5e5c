// Test helper: trajectory records (agent/run_dir.h layout) with token ids and log-probs, built turn by turn.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kgym::train::testing {

struct TurnSpec {
  double reward = 0;
  bool correct = false;
  double speedup = 0;
  double coverage = 0;
  std::vector<double> logprobs = {-0.5, -1.0, -0.25};  // one per response token
  bool abnormal = false;
};

inline nlohmann::json Record(const std::string& task, int sample, const std::vector<TurnSpec>& turns,
                             const std::string& status = "done") {
  nlohmann::json rec = {{"key", task + "#" + std::to_string(sample)},
                        {"task_id", task},
                        {"sample", sample},
                        {"status", status},
                        {"turns", nlohmann::json::array()}};
  int k = 0;
  for (const auto& t : turns) {
    ++k;
    nlohmann::json lp = nlohmann::json::array();
    std::vector<int64_t> ids;
    for (size_t j = 0; j < t.logprobs.size(); ++j) {
      lp.push_back({{"token", "x"}, {"logprob", t.logprobs[j]}});
      ids.push_back(static_cast<int64_t>(10 + j + static_cast<size_t>(k)));
    }
    nlohmann::json turn = {{"turn", k},
                           {"response", "```python\nclass ModelNew: pass\n```"},
                           {"code", "class ModelNew: pass"},
                           {"token_ids", ids},
                           {"prompt_token_ids", std::vector<int64_t>{1, 2, 3, k}},
                           {"logprobs", {{"content", lp}}},
                           {"abnormal", t.abnormal},
                           {"llm_s", 0.5},
                           {"eval_s", 0.25}};
    if (!t.abnormal) {
      turn["reward"] = t.reward;
      turn["result"] = {{"status", "completed"},
                        {"compiled", true},
                        {"correctness", t.correct},
                        {"decoy_kernel", false},
                        {"speedup", t.speedup}};
      turn["reward_summary"] = {{"reward", t.reward}, {"time_coverage", t.coverage}, {"num_coverage", t.coverage}};
    }
    rec["turns"].push_back(turn);
  }
  return rec;
}

}  // namespace kgym::train::testing
