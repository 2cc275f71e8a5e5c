// The sandbox policy of one worker, as the JSON the harness applies (python/kgym_harness/sandbox.py): which
// namespaces, which limits, which environment. Built here so the supervisor, not the worker, decides.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kgym {

struct PolicyInputs {
  bool enabled = true;
  bool cuda = false;
  int device_index = 0;
  double memory_limit_gb = 16;
  double timeout_s = 300;
  std::vector<std::string> hidden_paths;
  std::string role = "candidate";
  // CUDA backend: this source's build-cache directory (eval/extension_cache.h), made the candidate's writable
  // TORCH_EXTENSIONS_DIR by the sandbox. Never given to any other role.
  std::string extension_cache_dir;
};

nlohmann::json BuildPolicy(const PolicyInputs& in);

// The protections a sealed evaluation requires that `protections` (as reported by a worker) lacks, each with
// the reason the worker gave; empty when the seal is complete.
std::vector<std::string> MissingProtections(const nlohmann::json& protections);

}  // namespace kgym
