#include "skills/snapshot_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

namespace kgym::skills {
namespace fs = std::filesystem;
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IOError(what + " " + path + ": " + std::strerror(errno));
}

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

std::string SnapshotPath(const std::string& dir, int64_t step) {
  return (fs::path(dir) / ("global_step_" + std::to_string(step) + ".jsonl")).string();
}

Status ListSnapshotSteps(const std::string& dir, std::vector<int64_t>* steps) {
  steps->clear();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::Ok();
  if (!fs::is_directory(dir, ec)) return Status::InvalidArgument("library " + dir + " is not a directory");
  static const std::regex kName(R"(global_step_(\d{1,18})\.jsonl)");
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && std::regex_match(name, m, kName)) steps->push_back(std::stoll(m[1].str()));
  }
  if (ec) return Status::IOError("cannot list " + dir + ": " + ec.message());
  std::sort(steps->begin(), steps->end());
  return Status::Ok();
}

Status LoadSnapshot(const std::string& dir, int64_t max_step, LoadedSnapshot* out) {
  *out = LoadedSnapshot{};
  std::vector<int64_t> steps;
  if (auto st = ListSnapshotSteps(dir, &steps); !st.ok()) return st;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (max_step < 0 || *it <= max_step) {
      out->step = *it;
      break;
    }
  if (out->step < 0) return Status::Ok();
  out->path = SnapshotPath(dir, out->step);
  std::ifstream in(out->path);
  if (!in) return Status::IOError("cannot open " + out->path);
  std::set<std::string> seen;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    SkillRecord s;
    if (j.is_discarded() || !SkillFromJson(j, &s).ok()) {
      ++out->skipped_lines;
      continue;
    }
    if (!seen.insert(s.name).second) {
      ++out->duplicate_names;
      continue;
    }
    out->skills.push_back(std::move(s));
  }
  return Status::Ok();
}

Status LoadForStep(const std::string& dir, int64_t step, int64_t start_step, LoadedSnapshot* out) {
  return LoadSnapshot(dir, start_step > 0 ? std::min(step, start_step) : step, out);
}

Status WriteSnapshot(const std::string& dir, int64_t step, const std::vector<SkillRecord>& skills) {
  if (step < 0) return Status::InvalidArgument("snapshot step must be >= 0");
  std::string data;
  std::set<std::string> names;
  for (const auto& s : skills) {
    if (auto st = ValidateSkill(s); !st.ok()) return st;
    if (!names.insert(s.name).second)
      return Status::InvalidArgument("skill '" + s.name + "': field 'name' is not unique in the snapshot");
    data += s.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    data += '\n';
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create " + dir + ": " + ec.message());
  const std::string path = SnapshotPath(dir, step);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", tmp);
  Status st = WriteAll(fd, data, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync", tmp);
  if (::close(fd) != 0 && st.ok()) st = Errno("close", tmp);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = Errno("rename", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // make the rename durable; failure here does not undo a completed rename
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace kgym::skills
