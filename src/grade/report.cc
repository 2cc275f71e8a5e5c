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

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

// Rows of a table as vectors of cells; rendered as Markdown or HTML.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::string Markdown() const {
    std::ostringstream o;
    o << "|";
    for (const auto& h : head) o << " " << h << " |";
    o << "\n|";
    for (size_t i = 0; i < head.size(); ++i) o << (i == 0 ? "---|" : "---:|");
    o << "\n";
    for (const auto& r : rows) {
      o << "|";
      for (const auto& c : r) o << " " << c << " |";
      o << "\n";
    }
    return o.str();
  }
  std::string Html() const {
    std::ostringstream o;
    o << "<table><tr>";
    for (const auto& h : head) o << "<th>" << Escape(h) << "</th>";
    o << "</tr>";
    for (const auto& r : rows) {
      o << "<tr>";
      for (const auto& c : r) o << "<td>" << Escape(c) << "</td>";
      o << "</tr>";
    }
    o << "</table>";
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

std::string MarkdownReport(const nlohmann::json& g, const std::string& title) {
  const auto& s = g["overall"];
  std::ostringstream o;
  o << "# " << title << "\n\n" << SummaryLine(s) << ".\n\n";
  o << "## Per turn (Fast@p = correct and speedup >= p, over all samples)\n\n" << TurnTable(s).Markdown();
  o << "\n## Best of history (best correct turn among turns 1..T)\n\n" << BestTable(s).Markdown();
  o << "\n## Per level\n\n" << LevelTable(g).Markdown();
  return o.str();
}

std::string FastPlotSvg(const nlohmann::json& rows, const std::string& key, const std::string& caption) {
  const int W = 520, H = 300, L = 50, R = 110, T = 30, B = 40;
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
  int max_turn = rows.empty() ? 1 : std::max(1, rows.back()["turn"].get<int>());
  double ymax = 0.0;
  for (const auto& r : rows)
    for (double p : FastThresholds()) {
      const auto& v = r[key][ThresholdLabel(p)];
      if (v.is_number()) ymax = std::max(ymax, v.get<double>());
    }
  ymax = ymax <= 0 ? 1.0 : std::min(1.0, ymax * 1.1);
  auto X = [&](int turn) { return L + (max_turn == 1 ? (W - L - R) / 2.0 : (turn - 1) * double(W - L - R) / (max_turn - 1)); };
  auto Y = [&](double v) { return T + (1.0 - v / ymax) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">";
  o << "<text x=\"" << L << "\" y=\"18\" font-size=\"13\">" << Escape(caption) << "</text>";
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#444\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#444\"/>";
  for (int i = 0; i <= 4; ++i) {
    double v = ymax * i / 4;
    char lab[16];
    std::snprintf(lab, sizeof(lab), "%.0f%%", 100 * v);
    o << "<text x=\"" << L - 6 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">" << lab << "</text>";
    o << "<line x1=\"" << L << "\" y1=\"" << Y(v) << "\" x2=\"" << W - R << "\" y2=\"" << Y(v)
      << "\" stroke=\"#ddd\"/>";
  }
  for (int t = 1; t <= max_turn; ++t)
    o << "<text x=\"" << X(t) << "\" y=\"" << H - B + 15 << "\" text-anchor=\"middle\">" << t << "</text>";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">turn</text>";
  int ci = 0;
  for (double p : FastThresholds()) {
    const std::string label = ThresholdLabel(p);
    std::ostringstream pts;
    for (const auto& r : rows) {
      const auto& v = r[key][label];
      if (!v.is_number()) continue;
      pts << X(r["turn"].get<int>()) << "," << Y(v.get<double>()) << " ";
      o << "<circle cx=\"" << X(r["turn"].get<int>()) << "\" cy=\"" << Y(v.get<double>()) << "\" r=\"3\" fill=\""
        << colors[ci] << "\"><title>Fast@" << label << " turn " << r["turn"].get<int>() << ": " << Pct(v)
        << "%</title></circle>";
    }
    o << "<polyline fill=\"none\" stroke=\"" << colors[ci] << "\" stroke-width=\"2\" points=\"" << pts.str()
      << "\"/>";
    o << "<text x=\"" << W - R + 10 << "\" y=\"" << T + 15 * ci + 10 << "\" fill=\"" << colors[ci] << "\">Fast@"
      << label << "</text>";
    ++ci;
  }
  o << "</svg>";
  return o.str();
}

std::string HtmlReport(const nlohmann::json& g, const std::string& title) {
  const auto& s = g["overall"];
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << Escape(title) << "</title><style>"
    << "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
    << "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}"
    << ".plots{display:flex;flex-wrap:wrap;gap:1em}</style></head><body>\n";
  o << "<h1>" << Escape(title) << "</h1><p>" << Escape(SummaryLine(s)) << ".</p>\n";
  o << "<div class=\"plots\">" << FastPlotSvg(s["turns"], "fast_in_all", "Fast@p by turn (all samples)")
    << FastPlotSvg(s["best_by_turn"], "fast_in_all", "Fast@p, best of turns 1..T") << "</div>\n";
  o << "<h2>Per turn</h2>" << TurnTable(s).Html() << "\n<h2>Best of history</h2>" << BestTable(s).Html()
    << "\n<h2>Per level</h2>" << LevelTable(g).Html() << "\n";
  for (auto it = g["levels"].begin(); it != g["levels"].end(); ++it) {
    o << "<h3>Level " << Escape(it.key()) << "</h3><div class=\"plots\">"
      << FastPlotSvg(it.value()["turns"], "fast_in_all", "Level " + it.key() + ": Fast@p by turn") << "</div>"
      << TurnTable(it.value()).Html() << "\n";
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace kgym::grade
