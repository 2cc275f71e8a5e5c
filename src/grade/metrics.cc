#include "grade/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace kgym::grade {

namespace {
struct TurnView {
  int turn = 0;
  bool normal = false;
  bool compiled = false, correct = false, decoy = false;
  double speedup = 0, reward = 0;
};

struct SampleView {
  std::string task, level, status;
  std::vector<TurnView> turns;  // in turn order
};

bool HasMetrics(const nlohmann::json& r) {
  return r.is_object() && (r.contains("correctness") || r.contains("compiled") || r.contains("speedup"));
}

SampleView View(const nlohmann::json& rec) {
  SampleView s;
  s.task = rec.value("task_id", "");
  s.level = rec.value("level", "");
  if (s.level.empty()) s.level = "unknown";
  s.status = rec.value("status", "");
  if (rec.contains("turns") && rec["turns"].is_array()) {
    int idx = 0;
    for (const auto& t : rec["turns"]) {
      TurnView v;
      v.turn = t.value("turn", idx + 1);
      ++idx;
      const bool abnormal = t.value("abnormal", false);
      const nlohmann::json r = t.contains("result") ? t["result"] : nlohmann::json();
      v.normal = !abnormal && HasMetrics(r);
      if (v.normal) {
        v.compiled = r.value("compiled", false);
        // Hacking: Dr.Kernel's decoy flag, or any hack kgym's evaluator caught (outcome "hacked", any family).
        v.decoy = r.value("decoy_kernel", false) || r.value("outcome", "") == "hacked";
        v.correct = r.value("correctness", false) && !v.decoy;
        v.speedup = v.correct ? r.value("speedup", 0.0) : 0.0;
        if (t.contains("reward") && t["reward"].is_number()) v.reward = t["reward"];
      }
      s.turns.push_back(v);
    }
  }
  return s;
}

nlohmann::json Rate(double num, double den) { return den > 0 ? nlohmann::json(num / den) : nlohmann::json(); }

nlohmann::json Section(const std::vector<const SampleView*>& samples, const GradeOptions& opt) {
  nlohmann::json out;
  const auto& P = FastThresholds();
  int max_turn = 0, abnormal = 0;
  std::set<std::string> tasks;
  std::map<std::string, int> status_counts;
  for (const auto* s : samples) {
    tasks.insert(s->task);
    ++status_counts[s->status];
    for (const auto& t : s->turns) {
      max_turn = std::max(max_turn, t.turn);
      if (!t.normal) ++abnormal;
    }
  }
  out["num_samples"] = samples.size();
  out["num_tasks"] = tasks.size();
  out["max_turn"] = max_turn;
  out["abnormal_turns"] = abnormal;
  out["status_counts"] = status_counts;

  // Per turn.
  nlohmann::json turns = nlohmann::json::array();
  for (int T = 1; T <= max_turn; ++T) {
    double n = 0, compiled = 0, correct = 0, decoy = 0, perf = 0, reward = 0;
    std::vector<double> fast(P.size(), 0);
    for (const auto* s : samples)
      for (const auto& t : s->turns) {
        if (t.turn != T || !t.normal) continue;
        ++n;
        compiled += t.compiled;
        correct += t.correct;
        decoy += t.decoy;
        reward += t.reward;
        if (t.correct) {
          perf += t.speedup;
          for (size_t i = 0; i < P.size(); ++i) fast[i] += t.speedup >= P[i];
        }
      }
    nlohmann::json row = {{"turn", T},
                          {"n", n},
                          {"compilation_rate", Rate(compiled, n)},
                          {"correctness_rate", Rate(correct, n)},
                          {"hacking_rate", Rate(decoy, n)},
                          {"mean_performance", Rate(perf, correct)},
                          {"mean_performance_in_all", Rate(perf, n)},
                          {"mean_reward", Rate(reward, n)}};
    for (size_t i = 0; i < P.size(); ++i) {
      row["fast"][ThresholdLabel(P[i])] = Rate(fast[i], correct);
      row["fast_in_all"][ThresholdLabel(P[i])] = Rate(fast[i], n);
    }
    turns.push_back(row);
  }
  out["turns"] = turns;

  // Best of history.
  nlohmann::json best_rows = nlohmann::json::array();
  for (int T = 1; T <= max_turn; ++T) {
    double n = 0, any_correct = 0, best_sum = 0;
    std::vector<double> fast(P.size(), 0);
    for (const auto* s : samples) {
      bool seen = false, ok = false;
      double best = 0;
      for (const auto& t : s->turns) {
        if (t.turn > T || !t.normal) continue;
        seen = true;
        if (t.correct) {
          ok = true;
          best = std::max(best, t.speedup);
        }
      }
      if (!seen) continue;
      ++n;
      any_correct += ok;
      best_sum += best;
      for (size_t i = 0; i < P.size(); ++i) fast[i] += ok && best >= P[i];
    }
    nlohmann::json row = {{"turn", T},
                          {"n", n},
                          {"correctness_rate", Rate(any_correct, n)},
                          {"mean_best_performance_in_all", Rate(best_sum, n)}};
    for (size_t i = 0; i < P.size(); ++i) row["fast_in_all"][ThresholdLabel(P[i])] = Rate(fast[i], n);
    best_rows.push_back(row);
  }
  out["best_by_turn"] = best_rows;

  // Final turn, pass@k, hacking, speedups, score.
  double n_final = 0, final_correct = 0, decoy_turns = 0, eval_turns = 0, hacked_samples = 0, score_sum = 0;
  double sum_speed = 0, sum_log = 0, n_speed = 0;
  std::vector<double> final_fast(P.size(), 0);
  std::map<std::string, std::pair<int, int>> per_task;  // n, c
  for (const auto* s : samples) {
    const TurnView* last = nullptr;
    bool hacked = false;
    double score = 0;
    for (const auto& t : s->turns) {
      if (!t.normal) continue;
      last = &t;
      ++eval_turns;
      decoy_turns += t.decoy;
      hacked |= t.decoy;
      score += t.reward;
      if (t.correct && t.speedup > 0) {
        sum_speed += t.speedup;
        sum_log += std::log(t.speedup);
        ++n_speed;
      }
    }
    hacked_samples += hacked;
    if (!last) continue;
    score_sum += score;
    ++n_final;
    final_correct += last->correct;
    for (size_t i = 0; i < P.size(); ++i) final_fast[i] += last->correct && last->speedup >= P[i];
    auto& nc = per_task[s->task];
    ++nc.first;
    nc.second += last->reward >= opt.solve_threshold;
  }
  nlohmann::json fin = {{"n", n_final}, {"correctness_rate", Rate(final_correct, n_final)}};
  for (size_t i = 0; i < P.size(); ++i) fin["fast_in_all"][ThresholdLabel(P[i])] = Rate(final_fast[i], n_final);
  out["final"] = fin;
  nlohmann::json pass = nlohmann::json::object();
  for (int k : opt.pass_k) {
    double sum = 0;
    int counted = 0;
    for (const auto& [task, nc] : per_task)
      if (nc.first >= k) {
        sum += PassAtK(nc.first, nc.second, k);
        ++counted;
      }
    if (counted > 0 && counted == static_cast<int>(per_task.size())) pass[std::to_string(k)] = sum / counted;
  }
  out["pass_at_k"] = pass;
  out["hacking_ratio_turns"] = Rate(decoy_turns, eval_turns);
  out["hacking_ratio_samples"] = Rate(hacked_samples, static_cast<double>(samples.size()));
  out["mean_speedup"] = Rate(sum_speed, n_speed);
  out["geomean_speedup"] = n_speed > 0 ? nlohmann::json(std::exp(sum_log / n_speed)) : nlohmann::json();
  out["mean_score"] = Rate(score_sum, n_final);
  return out;
}
}  // namespace

std::string ThresholdLabel(double p) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%g", p);
  return buf;
}

double PassAtK(int n, int c, int k) {
  if (k <= 0 || n <= 0) return 0;
  if (n - c < k) return 1.0;
  double prod = 1.0;  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
  for (int i = n - c + 1; i <= n; ++i) prod *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - prod;
}

nlohmann::json Grade(const std::vector<nlohmann::json>& trajectories, const GradeOptions& opt) {
  std::vector<SampleView> views;
  views.reserve(trajectories.size());
  for (const auto& r : trajectories) views.push_back(View(r));
  std::vector<const SampleView*> all;
  std::map<std::string, std::vector<const SampleView*>> by_level;
  for (const auto& v : views) {
    all.push_back(&v);
    by_level[v.level].push_back(&v);
  }
  nlohmann::json out;
  out["overall"] = Section(all, opt);
  out["levels"] = nlohmann::json::object();
  for (const auto& [level, vs] : by_level) out["levels"][level] = Section(vs, opt);
  out["options"] = {
      {"solve_threshold", opt.solve_threshold}, {"fast_thresholds", FastThresholds()}, {"comparison", ">="}};
  return out;
}

}  // namespace kgym::grade
