#include "train/train_batch.h"

#include <algorithm>
#include <map>

namespace kgym::train {

namespace {

Status IdList(const nlohmann::json& j, const std::string& what, std::vector<int64_t>* out) {
  if (!j.is_array()) return Status::InvalidArgument(what + " is missing or not a list");
  out->clear();
  for (const auto& t : j) {
    if (!t.is_number_integer()) return Status::InvalidArgument(what + " holds a non-integer");
    out->push_back(t.get<int64_t>());
  }
  return Status::Ok();
}

// The engine's per-token log-probs in the OpenAI shape: {"content": [{"logprob": x, ...}, ...]}.
Status Logprobs(const nlohmann::json& lp, const std::string& what, std::vector<double>* out) {
  if (!lp.is_object() || !lp.contains("content") || !lp["content"].is_array())
    return Status::InvalidArgument(what + ": no logprobs.content (the engine must return log-probs)");
  out->clear();
  for (const auto& e : lp["content"]) {
    if (!e.is_object() || !e.contains("logprob") || !e["logprob"].is_number())
      return Status::InvalidArgument(what + ": a logprobs.content entry has no numeric logprob");
    out->push_back(e["logprob"].get<double>());
  }
  return Status::Ok();
}

Status RowOf(const nlohmann::json& turn, const std::string& where, const std::string& coverage_key, TurnRow* row) {
  Status s = IdList(turn["token_ids"], where + ".token_ids", &row->response_ids);
  if (s.ok()) s = IdList(turn["prompt_token_ids"], where + ".prompt_token_ids", &row->prompt_ids);
  if (s.ok()) s = Logprobs(turn.value("logprobs", nlohmann::json()), where, &row->rollout_logprobs);
  if (!s.ok()) return s;
  if (row->rollout_logprobs.size() != row->response_ids.size())
    return Status::InvalidArgument(where + ": " + std::to_string(row->rollout_logprobs.size()) + " log-probs for " +
                                   std::to_string(row->response_ids.size()) + " tokens");
  if (row->prompt_ids.empty()) return Status::InvalidArgument(where + ": empty prompt_token_ids");
  row->turn = turn.value("turn", 0);
  row->policy_version = turn.value("policy_version", int64_t{-1});
  if (turn.value("abnormal", false) || !turn.contains("result")) {
    row->loss_mask = 0;  // no verdict: no reward to learn from
    return Status::Ok();
  }
  const auto& r = turn["result"];
  row->reward = turn.value("reward", 0.0);
  row->correct = r.value("correctness", false) && !r.value("decoy_kernel", false);
  row->speedup = r.value("speedup", 0.0);
  const auto& sum = turn.value("reward_summary", nlohmann::json::object());
  row->coverage = sum.is_object() ? sum.value(coverage_key, 0.0) : 0.0;
  return Status::Ok();
}

}  // namespace

Status BuildTrainBatch(const std::vector<nlohmann::json>& records, const std::vector<std::string>& task_ids, int n,
                       const std::string& coverage_key, TrainBatch* out) {
  if (n < 1) return Status::InvalidArgument("rollout.n must be >= 1");
  std::map<std::string, int64_t> uid_of;
  for (size_t i = 0; i < task_ids.size(); ++i) uid_of[task_ids[i]] = static_cast<int64_t>(i);
  // Trajectories in (uid, sample) order, so traj ids increase and rows of one trajectory stay adjacent.
  std::vector<std::pair<int64_t, const nlohmann::json*>> order;
  for (const auto& rec : records) {
    auto it = uid_of.find(rec.value("task_id", ""));
    if (it == uid_of.end())
      return Status::InvalidArgument("a rollout of task '" + rec.value("task_id", "") +
                                     "' that is not among the step's prompts");
    const int sample = rec.value("sample", -1);
    if (sample < 0 || sample >= n) return Status::InvalidArgument("rollout sample out of range");
    order.push_back({it->second * n + sample, &rec});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  TrainBatch b;
  b.num_groups = static_cast<int64_t>(task_ids.size());
  for (const auto& [traj, rec] : order) {
    ++b.trajectories;
    const bool failed = rec->value("status", "") != "done";
    b.failed_trajectories += failed ? 1 : 0;
    const auto& turns = (*rec)["turns"];
    for (size_t k = 0; k < turns.size(); ++k) {
      const auto& turn = turns[k];
      const std::string where = rec->value("key", std::string("?")) + " turn " + std::to_string(k + 1);
      if (!turn.contains("response")) continue;  // the LLM call failed: no tokens
      if (!turn.contains("token_ids"))
        return Status::InvalidArgument(where +
                                       ": the rollout engine returned no token ids (it must support "
                                       "return_token_ids, e.g. vLLM >= 0.10.2)");
      TurnRow row;
      Status s = RowOf(turn, where, coverage_key, &row);
      if (!s.ok()) return s;
      row.uid = traj / n;
      row.traj = traj;
      row.task_id = rec->value("task_id", "");
      row.sample = rec->value("sample", 0);
      if (failed) row.loss_mask = 0;
      b.rows.push_back(std::move(row));
    }
  }
  *out = std::move(b);
  return Status::Ok();
}

}  // namespace kgym::train
