#include "agent/task.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kgym::agent {

namespace fs = std::filesystem;

namespace {
std::string JsonString(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long>());
  if (v.is_number()) return v.dump();
  return "";
}

Status ReadFile(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Status::IOError("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return Status::Ok();
}

// "level1" -> "1"; "" when the directory name is not levelN.
std::string LevelFromDir(const std::string& dir) {
  if (dir.size() > 5 && dir.rfind("level", 0) == 0 &&
      std::all_of(dir.begin() + 5, dir.end(), [](unsigned char c) { return std::isdigit(c); }))
    return dir.substr(5);
  return "";
}

Status TaskFromPy(const fs::path& file, const fs::path& root, Task* t) {
  Status s = ReadFile(file, &t->reference_code);
  if (!s.ok()) return s;
  t->name = file.stem().string();
  t->level = LevelFromDir(file.parent_path().filename().string());
  t->problem_id = ProblemIdFromName(t->name);
  std::string rel = root.empty() ? file.filename().string() : fs::relative(file, root).string();
  t->id = rel.size() > 3 && rel.compare(rel.size() - 3, 3, ".py") == 0 ? rel.substr(0, rel.size() - 3) : rel;
  t->source = file.string();
  return Status::Ok();
}
}  // namespace

long ProblemIdFromName(const std::string& stem) {
  size_t i = 0;
  while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i]))) ++i;
  if (i == 0 || i > 9) return -1;
  return std::stol(stem.substr(0, i));
}

nlohmann::json Task::ToJson() const {
  nlohmann::json j = {{"task_id", id},
                      {"name", name},
                      {"level", level},
                      {"problem_id", problem_id},
                      {"reference_code", reference_code},
                      {"entry_point", entry_point},
                      {"data_source", data_source}};
  if (!prompt.is_null()) j["prompt"] = prompt;
  if (!source.empty()) j["source"] = source;
  return j;
}

Status Task::FromJson(const nlohmann::json& j, Task* out) {
  if (!j.is_object()) return Status::InvalidArgument("task record is not a JSON object");
  Task t;
  const nlohmann::json extra =
      j.contains("extra_info") && j["extra_info"].is_object() ? j["extra_info"] : nlohmann::json::object();
  t.reference_code = JsonString(j, "reference_code");
  if (t.reference_code.empty() && j.contains("reward_model"))
    t.reference_code = JsonString(j["reward_model"], "ground_truth");
  if (t.reference_code.empty())
    return Status::InvalidArgument("task record has no reference_code (or reward_model.ground_truth)");
  t.name = JsonString(j, "name");
  if (t.name.empty()) t.name = JsonString(extra, "name");
  if (t.name.empty()) t.name = JsonString(extra, "module_name");
  t.level = JsonString(j, "level");
  if (t.level.empty()) t.level = JsonString(extra, "level");
  if (j.contains("problem_id") && j["problem_id"].is_number_integer())
    t.problem_id = j["problem_id"];
  else if (extra.contains("problem_id") && extra["problem_id"].is_number_integer())
    t.problem_id = extra["problem_id"];
  t.id = JsonString(j, "task_id");
  if (t.id.empty()) t.id = JsonString(j, "id");
  if (t.id.empty()) t.id = JsonString(extra, "uuid");
  if (t.id.empty() && t.problem_id >= 0)
    t.id = (t.level.empty() ? "" : "level" + t.level + "/") + std::to_string(t.problem_id);
  if (t.id.empty()) t.id = t.name;
  if (t.id.empty()) return Status::InvalidArgument("task record has no task_id, uuid, problem_id or name");
  if (t.name.empty()) t.name = t.id;
  std::string ep = JsonString(j, "entry_point");
  if (ep.empty()) ep = JsonString(extra, "entry_point");
  if (!ep.empty()) t.entry_point = ep;
  t.data_source = JsonString(j, "data_source");
  if (j.contains("prompt")) {
    const auto& p = j["prompt"];
    if (p.is_string())
      t.prompt = nlohmann::json::array({{{"role", "user"}, {"content", p}}});
    else if (p.is_array() && !p.empty()) {
      for (const auto& m : p)
        if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["content"].is_string())
          return Status::InvalidArgument("task " + t.id + ": prompt must be a list of {role, content}");
      t.prompt = p;
    }
  }
  t.source = JsonString(j, "source");
  *out = std::move(t);
  return Status::Ok();
}

Status LoadTasks(const std::string& path, std::vector<Task>* out) {
  fs::path p(path);
  std::error_code ec;
  std::vector<Task> tasks;
  if (fs::is_directory(p, ec)) {
    for (auto it = fs::recursive_directory_iterator(p, ec); it != fs::recursive_directory_iterator(); ++it) {
      const std::string fname = it->path().filename().string();
      if (it->is_directory()) {
        if (fname == "solutions" || fname == "__pycache__" || fname[0] == '.') it.disable_recursion_pending();
        continue;
      }
      if (it->path().extension() != ".py" || fname[0] == '_' || fname.rfind("test_", 0) == 0) continue;
      Task t;
      Status s = TaskFromPy(it->path(), p, &t);
      if (!s.ok()) return s;
      if (t.reference_code.find("class " + t.entry_point) == std::string::npos) continue;  // helper module
      tasks.push_back(std::move(t));
    }
    if (ec) return Status::IOError("cannot scan " + path + ": " + ec.message());
  } else if (p.extension() == ".py") {
    Task t;
    Status s = TaskFromPy(p, fs::path(), &t);
    if (!s.ok()) return s;
    tasks.push_back(std::move(t));
  } else if (p.extension() == ".jsonl" || p.extension() == ".json") {
    std::ifstream in(p);
    if (!in) return Status::IOError("cannot read " + path);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": not JSON");
      Task t;
      Status s = Task::FromJson(j, &t);
      if (!s.ok()) return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": " + s.message());
      tasks.push_back(std::move(t));
    }
  } else if (p.extension() == ".parquet") {
    return Status::InvalidArgument(path + " is parquet: convert it first with `kgym data convert " + path +
                                   " --out tasks.jsonl`");
  } else {
    return Status::NotFound("no tasks at " + path + " (expected a directory, .py or .jsonl)");
  }
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.id < b.id; });
  for (size_t i = 1; i < tasks.size(); ++i)
    if (tasks[i].id == tasks[i - 1].id)
      return Status::InvalidArgument("duplicate task id " + tasks[i].id + " in " + path +
                                     " (kgym data convert keeps one per id and says which)");
  if (tasks.empty()) return Status::NotFound("no tasks found in " + path);
  *out = std::move(tasks);
  return Status::Ok();
}

}  // namespace kgym::agent
