#include <filesystem>
#include <set>

#include "server/dashboard/dashboard.h"

namespace kgym::dashboard {

namespace fs = std::filesystem;

namespace {
// Size and modification time of the files a run's report data is made of: a change to any reloads it.
std::string Stamp(const std::vector<std::string>& files) {
  std::string stamp;
  for (const auto& f : files) {
    std::error_code ec;
    auto size = fs::file_size(f, ec);
    auto time = fs::last_write_time(f, ec);
    stamp += f + ":" +
             (ec ? std::string("-") : std::to_string(size) + "@" + std::to_string(time.time_since_epoch().count())) +
             ";";
  }
  return stamp;
}
}  // namespace

RunCatalog::RunCatalog(std::vector<std::string> roots) : roots_(std::move(roots)) {}

std::vector<std::pair<std::string, grade::RunFolder>> RunCatalog::List() const {
  std::vector<std::pair<std::string, grade::RunFolder>> out;
  std::set<std::string> ids;
  auto add = [&](grade::RunFolder run) {
    std::string id = run.name.empty() ? "run" : run.name;
    for (int n = 2; ids.count(id); ++n) id = run.name + "-" + std::to_string(n);
    ids.insert(id);
    out.push_back({id, std::move(run)});
  };
  for (const auto& root : roots_) {
    grade::RunFolder run;
    if (grade::OpenRunFolder(root, &run).ok()) {
      add(std::move(run));
      continue;
    }
    std::vector<fs::path> subs;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (const auto& p : subs)
      if (grade::OpenRunFolder(p.string(), &run).ok()) add(std::move(run));
  }
  return out;
}

Status RunCatalog::Find(const std::string& id, grade::RunFolder* out) const {
  for (auto& [rid, run] : List())
    if (rid == id) {
      *out = run;
      return Status::Ok();
    }
  return Status::NotFound("no run with id '" + id + "'");
}

Status RunCatalog::Load(const std::string& id, const std::string& source_in, Cached* out) {
  grade::RunFolder run;
  Status s = Find(id, &run);
  if (!s.ok()) return s;
  const std::string source = source_in.empty() ? grade::DefaultSource(run) : source_in;
  std::vector<std::string> files = {run.path + "/config.json", run.path + "/metrics.jsonl"};
  std::string file;
  if (!source.empty()) {
    s = grade::SourceFile(run, source, &file);
    if (!s.ok()) return s;
    files.push_back(file);
  }
  const std::string key = run.path + "\n" + source, stamp = Stamp(files);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.stamp == stamp) {
      *out = it->second;
      return Status::Ok();
    }
  }
  Cached c;
  c.stamp = stamp;
  s = grade::RunReportData(run, source, {}, &c.data);
  if (!s.ok()) return s;
  c.data["id"] = id;
  std::vector<std::string> ignored;  // the same warnings are in the report data
  if (!file.empty()) grade::ReadTrajectories(file, &c.trajectories, &ignored);
  std::lock_guard<std::mutex> l(mu_);
  if (cache_.size() >= 16) cache_.erase(cache_.begin());
  cache_[key] = c;
  *out = std::move(c);
  return Status::Ok();
}

Status RunCatalog::ReportData(const std::string& id, const std::string& source, nlohmann::json* out) {
  Cached c;
  Status s = Load(id, source, &c);
  if (s.ok()) *out = std::move(c.data);
  return s;
}

Status RunCatalog::Trajectories(const std::string& id, const std::string& source, std::vector<nlohmann::json>* out) {
  Cached c;
  Status s = Load(id, source, &c);
  if (s.ok()) *out = std::move(c.trajectories);
  return s;
}

}  // namespace kgym::dashboard
