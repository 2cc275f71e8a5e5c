#include "agent/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kgym::agent {

namespace fs = std::filesystem;

namespace {
// Parses complete lines; returns the byte length of the valid prefix (up to the last good newline).
size_t ParseRecords(const std::string& text, std::map<std::string, nlohmann::json>* out, int* torn) {
  size_t pos = 0, good = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      ++*torn;  // no newline: the writer died mid-line
      break;
    }
    std::string line = text.substr(pos, nl - pos);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("key") && j["key"].is_string()) {
      std::string key = j["key"];
      (*out)[key] = std::move(j);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      ++*torn;
    }
    pos = nl + 1;
    good = pos;
  }
  return good;
}
}  // namespace

Status RunDir::Open(const std::string& dir, RunDir* out) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create run directory " + dir + ": " + ec.message());
  out->dir_ = dir;
  out->records_.clear();
  out->torn_ = 0;
  const std::string path = out->trajectories_path();
  if (fs::exists(path)) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    size_t good = ParseRecords(text, &out->records_, &out->torn_);
    if (good < text.size()) {
      fs::resize_file(path, good, ec);
      if (ec) return Status::IOError("cannot cut the torn tail of " + path + ": " + ec.message());
    }
  }
  return Status::Ok();
}

Status RunDir::CheckOrWriteConfig(const nlohmann::json& config, const std::vector<std::string>& must_match) {
  const std::string path = dir_ + "/config.json";
  if (fs::exists(path)) {
    std::ifstream in(path);
    nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
    if (old.is_discarded()) return Status::InvalidArgument(path + " is not valid JSON; remove it or use a new --out");
    for (const auto& k : must_match) {
      if (old.value(k, nlohmann::json()) != config.value(k, nlohmann::json()))
        return Status::InvalidArgument("cannot resume " + dir_ + ": setting '" + k + "' was " +
                                       old.value(k, nlohmann::json()).dump() + " and is now " +
                                       config.value(k, nlohmann::json()).dump() + "; use a new --out directory");
    }
    return Status::Ok();
  }
  std::ofstream o(path);
  o << config.dump(2) << "\n";
  if (!o) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

Status RunDir::Append(const nlohmann::json& record) {
  std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  int fd = ::open(trajectories_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("cannot open " + trajectories_path());
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      ::close(fd);
      return Status::IOError("write to " + trajectories_path() + " failed");
    }
    off += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  records_[record.value("key", "")] = record;
  return Status::Ok();
}

Status LoadTrajectories(const std::string& path, std::vector<nlohmann::json>* out) {
  std::string file = fs::is_directory(path) ? path + "/trajectories.jsonl" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::NotFound("no trajectories at " + file);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::map<std::string, nlohmann::json> recs;
  int torn = 0;
  ParseRecords(ss.str(), &recs, &torn);
  out->clear();
  for (auto& [k, v] : recs) out->push_back(std::move(v));
  return Status::Ok();
}

}  // namespace kgym::agent
