#include "grade/run_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "grade/leaderboard.h"
#include "grade/metrics.h"

namespace kgym::grade {

namespace fs = std::filesystem;

namespace {
bool ReadText(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

// "rollouts/step_12" -> 12; -1 for anything else.
long StepOf(const std::string& folder) {
  const std::string name = fs::path(folder).filename().string();
  if (name.rfind("step_", 0) != 0 || name.size() == 5) return -1;
  if (name.find_first_not_of("0123456789", 5) != std::string::npos) return -1;
  return std::stol(name.substr(5));
}

// The step folders of RUN/<group> that hold a trajectories.jsonl, by step.
std::vector<std::string> StepSources(const std::string& run, const std::string& group) {
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run + "/" + group, ec)) {
    long step = StepOf(e.path().string());
    if (step >= 0 && fs::is_regular_file(e.path() / "trajectories.jsonl"))
      found.push_back({step, group + "/" + e.path().filename().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}
}  // namespace

Status ReadJsonl(const std::string& path, const std::string& label, std::vector<nlohmann::json>* records,
                 std::vector<std::string>* warnings) {
  std::string text;
  if (!ReadText(path, &text)) return Status::NotFound("cannot read " + path);
  records->clear();
  size_t pos = 0;
  for (int line_no = 1; pos < text.size(); ++line_no) {
    size_t nl = text.find('\n', pos);
    const bool torn = nl == std::string::npos;
    std::string line = text.substr(pos, torn ? std::string::npos : nl - pos);
    pos = torn ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!torn && j.is_object()) {
      records->push_back(std::move(j));
      continue;
    }
    std::ostringstream w;
    w << label << ": line " << line_no;
    if (torn)
      w << " is cut off (no newline at the end of the file: the writer was stopped mid-line?)";
    else
      w << " is not a JSON object";
    w << "; skipped it (" << line.size() << " bytes)";
    warnings->push_back(w.str());
  }
  return Status::Ok();
}

Status ReadTrajectories(const std::string& path, std::vector<nlohmann::json>* records,
                        std::vector<std::string>* warnings) {
  std::string file = fs::is_directory(path) ? path + "/trajectories.jsonl" : path;
  std::vector<nlohmann::json> lines;
  Status s = ReadJsonl(file, fs::path(file).filename().string(), &lines, warnings);
  if (!s.ok()) return s;
  std::map<std::string, nlohmann::json> latest;
  int unkeyed = 0;
  for (auto& j : lines) {
    if (!j.contains("key") || !j["key"].is_string()) {
      ++unkeyed;
      continue;
    }
    std::string key = j["key"];
    latest[key] = std::move(j);
  }
  if (unkeyed > 0)
    warnings->push_back(file + ": " + std::to_string(unkeyed) + " record(s) without a string \"key\" skipped");
  records->clear();
  for (auto& [k, v] : latest) records->push_back(std::move(v));
  return Status::Ok();
}

Status OpenRunFolder(const std::string& path, RunFolder* out) {
  RunFolder r;
  r.path = path;
  r.name = fs::path(path).lexically_normal().filename().string();
  if (r.name.empty() || r.name == ".") r.name = fs::absolute(path).lexically_normal().parent_path().filename().string();
  const bool metrics = fs::is_regular_file(path + "/metrics.jsonl");
  if (fs::is_regular_file(path + "/trajectories.jsonl")) r.sources.push_back("trajectories");
  for (const char* group : {"rollouts", "val"})
    for (auto& s : StepSources(path, group)) r.sources.push_back(s);
  if (!metrics && r.sources.empty())
    return Status::NotFound(path + " is not a run folder (no trajectories.jsonl, metrics.jsonl, rollouts/ or val/)");
  r.kind = metrics ? "training" : "agent";
  r.config = nlohmann::json::object();
  std::string text;
  if (ReadText(path + "/config.json", &text)) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object())
      r.config = std::move(j);
    else
      r.warnings.push_back("config.json is not a JSON object; the run's settings are not shown");
  }
  *out = std::move(r);
  return Status::Ok();
}

std::string DefaultSource(const RunFolder& run) {
  if (run.sources.empty()) return "";
  if (run.sources.front() == "trajectories") return "trajectories";
  std::string best;
  long best_step = -1;
  for (const auto& s : run.sources)  // the latest val step, else the latest rollout step
    if (s.rfind("val/", 0) == 0 && StepOf(s) >= best_step) best = s, best_step = StepOf(s);
  return best.empty() ? run.sources.back() : best;
}

Status SourceFile(const RunFolder& run, const std::string& source, std::string* file) {
  if (std::find(run.sources.begin(), run.sources.end(), source) == run.sources.end())
    return Status::InvalidArgument("run " + run.name + " has no trajectory source '" + source + "'");
  *file = source == "trajectories" ? run.path + "/trajectories.jsonl" : run.path + "/" + source + "/trajectories.jsonl";
  return Status::Ok();
}

nlohmann::json MetricsTable(const std::vector<nlohmann::json>& records, std::vector<std::string>* warnings) {
  nlohmann::json rows = nlohmann::json::array();
  std::set<std::string> keys;
  int stepless = 0;
  for (const auto& rec : records) {
    if (!rec.contains("step") || !rec["step"].is_number_integer()) {
      ++stepless;
      continue;
    }
    nlohmann::json row = {{"step", rec["step"]}};
    if (rec.contains("time") && rec["time"].is_string()) row["time"] = rec["time"];
    for (auto it = rec.begin(); it != rec.end(); ++it)
      if (it.key() != "step" && it.value().is_number()) {
        row[it.key()] = it.value();
        keys.insert(it.key());
      }
    rows.push_back(std::move(row));
  }
  if (stepless > 0)
    warnings->push_back("metrics.jsonl: " + std::to_string(stepless) +
                        " record(s) without an integer \"step\" skipped");
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& k : keys) {
    size_t slash = k.find('/');
    groups[slash == std::string::npos ? "other" : k.substr(0, slash)].push_back(k);
  }
  return {{"rows", rows}, {"keys", keys}, {"groups", groups}};
}

nlohmann::json TrajectoryReport(const std::vector<nlohmann::json>& trajectories, const GradeOptions& opt) {
  return {{"grade", Grade(trajectories, opt)},
          {"leaderboard", Leaderboard(trajectories)},
          {"hack_families", HackFamilies(trajectories)}};
}

Status RunReportData(const RunFolder& run, const std::string& source_in, const GradeOptions& opt, nlohmann::json* out) {
  std::vector<std::string> warnings = run.warnings;
  const std::string source = source_in.empty() ? DefaultSource(run) : source_in;
  nlohmann::json data = {{"grade", nullptr},
                         {"leaderboard", nlohmann::json::array()},
                         {"hack_families", nlohmann::json::object()},
                         {"metrics", nullptr}};
  if (!source.empty()) {
    std::string file;
    Status s = SourceFile(run, source, &file);
    if (!s.ok()) return s;
    std::vector<nlohmann::json> trajectories;
    s = ReadTrajectories(file, &trajectories, &warnings);
    if (!s.ok()) return s;
    data.update(TrajectoryReport(trajectories, opt));
  }
  if (run.kind == "training") {
    std::vector<nlohmann::json> records;
    Status s = ReadJsonl(run.path + "/metrics.jsonl", "metrics.jsonl", &records, &warnings);
    if (!s.ok()) return s;
    data["metrics"] = MetricsTable(records, &warnings);
  }
  data["run"] = {{"name", run.name},       {"path", run.path}, {"kind", run.kind},    {"config", run.config},
                 {"sources", run.sources}, {"source", source}, {"warnings", warnings}};
  *out = std::move(data);
  return Status::Ok();
}

nlohmann::json TrajectorySummary(const nlohmann::json& rec) {
  double best = 0;
  nlohmann::json final_reward, final_outcome;
  int turns = 0;
  if (rec.contains("turns") && rec["turns"].is_array()) {
    for (const auto& t : rec["turns"]) {
      ++turns;
      const auto r = t.contains("result") && t["result"].is_object() ? t["result"] : nlohmann::json::object();
      if (r.value("correctness", false) && !r.value("decoy_kernel", false))
        best = std::max(best, r.value("speedup", 0.0));
      if (t.contains("reward") && t["reward"].is_number()) final_reward = t["reward"];
      if (r.contains("outcome")) final_outcome = r["outcome"];
    }
  }
  return {{"key", rec.value("key", "")},
          {"task_id", rec.value("task_id", "")},
          {"level", rec.value("level", "")},
          {"sample", rec.value("sample", nlohmann::json())},
          {"status", rec.value("status", "")},
          {"turns", turns},
          {"best_speedup", best},
          {"final_reward", final_reward},
          {"final_outcome", final_outcome}};
}

}  // namespace kgym::grade
