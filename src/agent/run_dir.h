// RunDir: the on-disk record of an agent run.
//   RUN_DIR/config.json        the run's settings (written once; a resume must match the key settings)
//   RUN_DIR/trajectories.jsonl one JSON object per finished trajectory, appended and fsync'ed as each ends
// A record's "key" is "<task_id>#<sample>". On open, a torn last line (the process was killed mid-write) is
// cut off; every complete line survives. The latest record of a key wins.
//
// Thread-safe: Append() may be called from many threads.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::agent {

class RunDir {
 public:
  // Creates the directory if needed and reads the records already there.
  static Status Open(const std::string& dir, RunDir* out);

  // Writes config.json when absent; when present, fails unless the values of `must_match` keys are equal.
  Status CheckOrWriteConfig(const nlohmann::json& config, const std::vector<std::string>& must_match);

  Status Append(const nlohmann::json& record);

  // Latest record per key.
  const std::map<std::string, nlohmann::json>& records() const { return records_; }
  bool Has(const std::string& key) const { return records_.count(key) > 0; }
  const std::string& dir() const { return dir_; }
  std::string trajectories_path() const { return dir_ + "/trajectories.jsonl"; }
  int torn_lines_dropped() const { return torn_; }

 private:
  std::string dir_;
  std::map<std::string, nlohmann::json> records_;
  std::mutex mu_;
  int torn_ = 0;
};

// Reads trajectory records (latest per key) from a run directory or a .jsonl file.
Status LoadTrajectories(const std::string& path, std::vector<nlohmann::json>* out);

}  // namespace kgym::agent
