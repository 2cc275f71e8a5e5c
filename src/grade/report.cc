#include "grade/report.h"

#include <cstdio>
#include <sstream>

#include "grade/metrics.h"

namespace kgym::grade {

namespace {
std::string Pct(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", 100.0 * v.get<double>());
  return buf;
}

std::string Num(const nlohmann::json& v, const char* fmt = "%.3f") {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), fmt, v.get<double>());
  return buf;
}

// A Markdown table cell: '|' would end the cell and a newline the row.
std::string Cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n' || c == '\r')
      o += ' ';
    else
      o += c;
  }
  return o;
}

// Rows of a table as vectors of cells, rendered as Markdown.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::string Markdown() const {
    std::ostringstream o;
    o << "|";
    for (const auto& h : head) o << " " << Cell(h) << " |";
    o << "\n|";
    for (size_t i = 0; i < head.size(); ++i) o << (i == 0 ? "---|" : "---:|");
    o << "\n";
    for (const auto& r : rows) {
      o << "|";
      for (const auto& c : r) o << " " << Cell(c) << " |";
      o << "\n";
    }
    return o.str();
  }
};

Table TurnTable(const nlohmann::json& sec) {
  Table t;
  t.head = {"turn", "n", "compiled %", "correct %"};
  for (double p : FastThresholds()) t.head.push_back("Fast@" + ThresholdLabel(p) + " %");
  t.head.insert(t.head.end(), {"hacked %", "mean speedup (correct)", "mean reward"});
  for (const auto& r : sec["turns"]) {
    std::vector<std::string> row = {std::to_string(r["turn"].get<int>()), Num(r["n"], "%.0f"),
                                    Pct(r["compilation_rate"]), Pct(r["correctness_rate"])};
    for (double p : FastThresholds()) row.push_back(Pct(r["fast_in_all"][ThresholdLabel(p)]));
    row.push_back(Pct(r["hacking_rate"]));
    row.push_back(Num(r["mean_performance"]));
    row.push_back(Num(r["mean_reward"]));
    t.rows.push_back(row);
  }
  return t;
}

Table BestTable(const nlohmann::json& sec) {
  Table t;
  t.head = {"turns 1..T", "n", "correct %"};
  for (double p : FastThresholds()) t.head.push_back("Fast@" + ThresholdLabel(p) + " %");
  for (const auto& r : sec["best_by_turn"]) {
    std::vector<std::string> row = {std::to_string(r["turn"].get<int>()), Num(r["n"], "%.0f"),
                                    Pct(r["correctness_rate"])};
    for (double p : FastThresholds()) row.push_back(Pct(r["fast_in_all"][ThresholdLabel(p)]));
    t.rows.push_back(row);
  }
  return t;
}

Table LevelTable(const nlohmann::json& grade) {
  Table t;
  t.head = {"level", "tasks", "samples", "final correct %"};
  for (double p : FastThresholds()) t.head.push_back("final Fast@" + ThresholdLabel(p) + " %");
  t.head.push_back("best-of-history Fast@1.2 %");
  for (auto it = grade["levels"].begin(); it != grade["levels"].end(); ++it) {
    const auto& s = it.value();
    std::vector<std::string> row = {it.key(), std::to_string(s["num_tasks"].get<int>()),
                                    std::to_string(s["num_samples"].get<int>()), Pct(s["final"]["correctness_rate"])};
    for (double p : FastThresholds()) row.push_back(Pct(s["final"]["fast_in_all"][ThresholdLabel(p)]));
    row.push_back(s["best_by_turn"].empty() ? "-" : Pct(s["best_by_turn"].back()["fast_in_all"]["1.2"]));
    t.rows.push_back(row);
  }
  return t;
}

std::string SummaryLine(const nlohmann::json& s) {
  std::ostringstream o;
  o << s["num_tasks"].get<int>() << " tasks, " << s["num_samples"].get<int>() << " samples, "
    << s["max_turn"].get<int>() << " turns, " << s["abnormal_turns"].get<int>() << " abnormal turns; hacking "
    << Pct(s["hacking_ratio_turns"]) << "% of evaluated turns (" << Pct(s["hacking_ratio_samples"])
    << "% of samples); mean speedup of correct turns " << Num(s["mean_speedup"]) << " (geomean "
    << Num(s["geomean_speedup"]) << "); mean score " << Num(s["mean_score"]);
  std::string pk;
  for (auto it = s["pass_at_k"].begin(); it != s["pass_at_k"].end(); ++it)
    pk += (pk.empty() ? "" : ", ") + std::string("pass@") + it.key() + " " + Pct(it.value()) + "%";
  if (!pk.empty()) o << "; " << pk;
  return o.str();
}
}  // namespace

namespace {
Table LeaderboardTable(const nlohmann::json& rows) {
  Table t;
  t.head = {"task",         "level",   "samples",           "correct samples",
            "best speedup", "at turn", "mean final reward", "hacked turns"};
  for (const auto& r : rows)
    t.rows.push_back({r["task_id"].get<std::string>(), r["level"].get<std::string>(), Num(r["samples"], "%.0f"),
                      Num(r["correct_samples"], "%.0f"), Num(r["best_speedup"]), Num(r["best_turn"], "%.0f"),
                      Num(r["mean_final_reward"]), Num(r["hacked_turns"], "%.0f")});
  return t;
}

Table HackTable(const nlohmann::json& families) {
  Table t;
  t.head = {"hack family", "turns"};
  for (auto it = families.begin(); it != families.end(); ++it) t.rows.push_back({it.key(), Num(it.value(), "%.0f")});
  return t;
}

// The last value of every metric of a training run.
Table LastMetricsTable(const nlohmann::json& metrics) {
  Table t;
  t.head = {"metric", "last step", "last value"};
  for (const auto& key : metrics["keys"]) {
    for (auto it = metrics["rows"].rbegin(); it != metrics["rows"].rend(); ++it) {
      if (!it->contains(key.get<std::string>())) continue;
      t.rows.push_back(
          {key.get<std::string>(), Num((*it)["step"], "%.0f"), Num((*it)[key.get<std::string>()], "%.6g")});
      break;
    }
  }
  return t;
}
}  // namespace

std::string MarkdownReport(const nlohmann::json& data, const std::string& title) {
  std::ostringstream o;
  o << "# " << title << "\n\n";
  const auto& run = data["run"];
  for (const auto& w : run["warnings"]) o << "> **Warning:** " << w.get<std::string>() << "\n\n";
  if (data["grade"].is_object()) {
    const auto& g = data["grade"];
    const auto& s = g["overall"];
    o << "Source: `" << run["source"].get<std::string>() << "`. " << SummaryLine(s) << ".\n\n";
    o << "## Per turn (Fast@p = correct and speedup >= p, over all samples)\n\n" << TurnTable(s).Markdown();
    o << "\n## Best of history (best correct turn among turns 1..T)\n\n" << BestTable(s).Markdown();
    o << "\n## Per level\n\n" << LevelTable(g).Markdown();
    if (!data["hack_families"].empty())
      o << "\n## Hacked turns by family\n\n" << HackTable(data["hack_families"]).Markdown();
    o << "\n## Per task (best first)\n\n" << LeaderboardTable(data["leaderboard"]).Markdown();
  }
  if (data["metrics"].is_object())
    o << "\n## Training metrics (last value of each)\n\n" << LastMetricsTable(data["metrics"]).Markdown();
  return o.str();
}

}  // namespace kgym::grade
