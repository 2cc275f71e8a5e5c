#include "train/rollout_metrics.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "grade/metrics.h"

namespace kgym::train {

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

double Num(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

Status LoadKnownSolutions(const std::string& dir, const std::vector<std::string>& task_ids, KnownSolutions* out) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) return Status::NotFound("metrics.known_solutions: " + dir + " is not a folder");
  KnownSolutions k;
  for (const auto& id : task_ids) {
    const fs::path base = fs::path(dir) / id;
    const std::string stem = base.filename().string() + "_";
    std::error_code ec;
    if (!fs::is_directory(base.parent_path(), ec)) continue;
    for (const auto& e : fs::directory_iterator(base.parent_path(), ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(stem, 0) != 0 || e.path().extension() != ".py") continue;
      std::ifstream in(e.path());
      std::stringstream buf;
      buf << in.rdbuf();
      k[id].push_back({name.substr(stem.size(), name.size() - stem.size() - 3), Trim(buf.str())});
    }
  }
  *out = std::move(k);
  return Status::Ok();
}

nlohmann::json RolloutMetrics(const std::vector<nlohmann::json>& records, const KnownSolutions* known,
                              const std::string& prefix) {
  nlohmann::json m = nlohmann::json::object();
  const auto P = [&](const std::string& k) { return prefix + "/" + k; };
  const nlohmann::json g = grade::Grade(records)["overall"];
  const auto& fin = g["final"];
  m[P("correct_rate")] = Num(fin, "correctness_rate");
  for (double p : grade::FastThresholds()) {
    const std::string label = grade::ThresholdLabel(p);
    m[P("fast@" + label)] = fin.contains("fast_in_all") ? Num(fin["fast_in_all"], label.c_str()) : 0.0;
    if (g.contains("best_by_turn") && !g["best_by_turn"].empty())
      m[P("best_fast@" + label)] = Num(g["best_by_turn"].back()["fast_in_all"], label.c_str());
  }
  m[P("hacking_rate")] = Num(g, "hacking_ratio_turns");
  m[P("abnormal_turns")] = Num(g, "abnormal_turns");
  double turns = 0, tokens = 0, reward = 0, speed = 0, cov = 0, correct = 0, llm_s = 0, eval_s = 0;
  std::map<std::string, double> solution;
  for (const auto& rec : records) {
    const auto& ts = rec["turns"];
    for (const auto& t : ts) {
      llm_s += Num(t, "llm_s");
      eval_s += Num(t, "eval_s");
      if (!t.contains("result")) continue;
      ++turns;
      reward += Num(t, "reward");
      if (t.contains("token_ids"))
        tokens += static_cast<double>(t["token_ids"].size());
      else if (t.contains("usage"))
        tokens += Num(t["usage"], "completion_tokens");
      const auto& r = t["result"];
      if (r.value("correctness", false) && !r.value("decoy_kernel", false)) {
        ++correct;
        speed += Num(r, "speedup");
        cov += Num(t.value("reward_summary", nlohmann::json::object()), "time_coverage");
      }
    }
    if (known && !ts.empty() && ts[0].contains("code")) {
      auto it = known->find(rec.value("task_id", ""));
      if (it == known->end()) continue;
      const std::string code = Trim(ts[0]["code"].get<std::string>());
      for (const auto& [kind, text] : it->second) solution[kind] += code == text ? 1.0 : 0.0;
    }
  }
  m[P("turns")] = turns;
  m[P("mean_reward")] = turns > 0 ? reward / turns : 0.0;
  m[P("speedup_mean")] = correct > 0 ? speed / correct : 0.0;
  m[P("coverage_mean")] = correct > 0 ? cov / correct : 0.0;
  m[P("response_tokens_mean")] = turns > 0 ? tokens / turns : 0.0;
  m[P("llm_s")] = llm_s;
  m[P("eval_s")] = eval_s;
  if (known) {
    double n = 0;
    for (const auto& rec : records) n += known->count(rec.value("task_id", "")) ? 1.0 : 0.0;
    for (const auto& [kind, c] : solution) m[P("solution/" + kind)] = n > 0 ? c / n : 0.0;
  }
  return m;
}

}  // namespace kgym::train
