// Task: one reference architecture the agent optimises, and the loaders of the dataset formats the agent
// reads directly: KernelBench folders (levelN/<id>_<Name>.py), kgym's tasks/ tree (the same layout;
// `solutions/` subtrees are skipped), single .py files and kgym task JSONL (one Task::ToJson per line; the
// Dr.Kernel parquet schema's field names are accepted too). Parquet files go through `kgym data convert`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::agent {

struct Task {
  std::string id;     // unique in a dataset, e.g. "level1/19_ReLU"
  std::string name;   // e.g. "19_ReLU"
  std::string level;  // "1", "2", ... or "" when unknown
  long problem_id = -1;
  std::string reference_code;
  std::string entry_point = "Model";
  nlohmann::json prompt;  // stored chat prompt (array of {role, content}); null = render the template
  std::string data_source;
  std::string source;  // where it was read from

  nlohmann::json ToJson() const;
  // Accepts kgym's fields and Dr.Kernel's (reward_model.ground_truth, extra_info.{entry_point,uuid,
  // problem_id,name,level}, data_source). Fails naming the missing field.
  static Status FromJson(const nlohmann::json& j, Task* out);
};

// Loads tasks from a directory, a .py file or a .jsonl file; sorted by id; ids must be unique.
Status LoadTasks(const std::string& path, std::vector<Task>* out);

// Parses the leading number of a KernelBench file stem ("19_ReLU" -> 19), -1 when none.
long ProblemIdFromName(const std::string& stem);

}  // namespace kgym::agent
