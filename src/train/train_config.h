// The configuration of `kgym sft` and `kgym train`: one JSON document, resolved in three layers.
//  1. Defaults: python/kgym_train/configs/{sft,rl}.yaml, which document every key (compiled into the binary, so
//     the file and the behaviour cannot drift).
//  2. The user's file, YAML or JSON (--config), merged over the defaults key by key.
//  3. Command-line overrides `dotted.key=value` (the seeds' scripts' style: actor.optim.lr=1e-5), the value
//     parsed as YAML (numbers, booleans, null, [lists], {maps}).
// A key the defaults lack is an error naming it and the nearest known key, except under the open maps
// (model.init: any Qwen3Config field). Relative paths (model.path, data.train_files, trainer.out_dir, ...) are
// made absolute against the working directory, so the learner (another process) and the run record agree.
// The result is what the learner reads and what the run folder records as config.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::train {

enum class ConfigKind { kSft, kRl };

// The documented default file's text.
const std::string& DefaultConfigYaml(ConfigKind kind);

// YAML (a superset of JSON) -> JSON. Scalars become null/bool/int/float/string as YAML 1.2's core schema reads them.
Status YamlToJson(const std::string& text, nlohmann::json* out);

Status LoadTrainConfig(ConfigKind kind, const std::string& file, const std::vector<std::string>& overrides,
                       nlohmann::json* out);

// Reads `dotted.key` of a resolved config; the key must exist (resolved configs hold every key).
const nlohmann::json& ConfigAt(const nlohmann::json& cfg, const std::string& dotted);

}  // namespace kgym::train
