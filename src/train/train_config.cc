#include "train/train_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "train/default_configs.h"

namespace kgym::train {

namespace {

const std::vector<std::string>& OpenMaps() {
  static const std::vector<std::string> k = {"model.init"};
  return k;
}

// Keys whose values are paths (strings or lists of strings) resolved against the working directory.
const std::vector<std::string>& PathKeys() {
  static const std::vector<std::string> k = {
      "model.path",     "model.tokenizer",     "tokenizer.corpus",       "data.train_files",
      "data.val_files", "trainer.out_dir",     "trainer.resume",         "eval.tasks",
      "rollout.skills", "rollout.weights_dir", "metrics.known_solutions"};
  return k;
}

nlohmann::json Scalar(const YAML::Node& n) {
  const std::string& v = n.Scalar();
  if (n.Tag() == "!") return v;  // quoted: always a string
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (v == "null" || v == "Null" || v == "NULL" || v == "~" || v.empty()) return nullptr;
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  if (std::regex_match(v, kInt)) {
    try {
      return std::stoll(v);
    } catch (const std::out_of_range&) {
      return std::stod(v);
    }
  }
  if (std::regex_match(v, kFloat)) return std::stod(v);
  if (v == ".inf" || v == "+.inf") return std::numeric_limits<double>::infinity();
  return v;
}

nlohmann::json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(n);
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& e : n) a.push_back(ToJson(e));
      return a;
    }
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = ToJson(kv.second);
      return o;
    }
  }
  return nullptr;
}

bool IsOpen(const std::string& path) {
  for (const auto& p : OpenMaps())
    if (path == p || path.rfind(p + ".", 0) == 0) return true;
  return false;
}

void CollectKeys(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string k = prefix.empty() ? it.key() : prefix + "." + it.key();
    out->push_back(k);
    if (it.value().is_object()) CollectKeys(it.value(), k, out);
  }
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Status UnknownKey(const nlohmann::json& defaults, const std::string& key, const std::string& where) {
  std::vector<std::string> known;
  CollectKeys(defaults, "", &known);
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& k : known) {
    size_t d = EditDistance(k, key);
    if (d < best_d) best_d = d, best = k;
  }
  return Status::InvalidArgument(where + ": unknown config key '" + key + "'" +
                                 (best.empty() ? "" : " (did you mean '" + best + "'?)"));
}

// Merges `over` into `base` (objects key by key, anything else replaced), checking keys against `base`.
Status Merge(nlohmann::json* base, const nlohmann::json& over, const std::string& prefix,
             const nlohmann::json& defaults, const std::string& where) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (!base->contains(it.key()) && !IsOpen(path)) return UnknownKey(defaults, path, where);
    nlohmann::json& slot = (*base)[it.key()];
    if (slot.is_object() && it.value().is_object()) {
      Status s = Merge(&slot, it.value(), path, defaults, where);
      if (!s.ok()) return s;
    } else if (slot.is_object() && !IsOpen(path)) {
      return Status::InvalidArgument(where + ": '" + path + "' is a section; set its keys (" + path + ".KEY)");
    } else {
      slot = it.value();
    }
  }
  return Status::Ok();
}

Status ApplyOverride(nlohmann::json* cfg, const std::string& arg, const nlohmann::json& defaults) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::InvalidArgument("override '" + arg + "' is not key=value (e.g. actor.optim.lr=1e-5)");
  const std::string key = arg.substr(0, eq);
  nlohmann::json value;
  Status s = YamlToJson(arg.substr(eq + 1), &value);
  if (!s.ok()) return Status::InvalidArgument("override '" + arg + "': " + s.message());
  // Build {a: {b: {c: value}}} and merge it, so the same key checks apply.
  nlohmann::json nested = value;
  std::string rest = key;
  for (size_t dot = rest.rfind('.');; dot = rest.rfind('.')) {
    const std::string leaf = dot == std::string::npos ? rest : rest.substr(dot + 1);
    if (leaf.empty()) return Status::InvalidArgument("override '" + arg + "': empty key part");
    nested = nlohmann::json{{leaf, nested}};
    if (dot == std::string::npos) break;
    rest = rest.substr(0, dot);
  }
  return Merge(cfg, nested, "", defaults, "override '" + arg + "'");
}

nlohmann::json* Slot(nlohmann::json* cfg, const std::string& dotted) {
  nlohmann::json* cur = cfg;
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!cur->is_object() || !cur->contains(part)) return nullptr;
    cur = &(*cur)[part];
  }
  return cur;
}

std::string Absolute(const std::string& p) {
  if (p.empty() || p == "auto" || p == "disable") return p;
  return std::filesystem::absolute(p).lexically_normal().string();
}

void ResolvePaths(nlohmann::json* cfg) {
  for (const auto& key : PathKeys()) {
    nlohmann::json* v = Slot(cfg, key);
    if (!v) continue;
    if (v->is_string()) *v = Absolute(v->get<std::string>());
    if (v->is_array())
      for (auto& e : *v)
        if (e.is_string()) e = Absolute(e.get<std::string>());
  }
}

}  // namespace

const std::string& DefaultConfigYaml(ConfigKind kind) {
  static const std::string sft = kSftDefaultsYaml, rl = kRlDefaultsYaml;
  return kind == ConfigKind::kSft ? sft : rl;
}

Status YamlToJson(const std::string& text, nlohmann::json* out) {
  try {
    *out = ToJson(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("not valid YAML: ") + e.what());
  }
  return Status::Ok();
}

Status LoadTrainConfig(ConfigKind kind, const std::string& file, const std::vector<std::string>& overrides,
                       nlohmann::json* out) {
  nlohmann::json defaults;
  Status s = YamlToJson(DefaultConfigYaml(kind), &defaults);
  if (!s.ok()) return Status::Internal("built-in defaults: " + s.message());
  nlohmann::json cfg = defaults;
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::NotFound("config file " + file + " cannot be read");
    std::stringstream buf;
    buf << in.rdbuf();
    nlohmann::json user;
    s = YamlToJson(buf.str(), &user);
    if (!s.ok()) return Status::InvalidArgument(file + ": " + s.message());
    if (!user.is_null() && !user.is_object()) return Status::InvalidArgument(file + ": the top level must be a map");
    if (user.is_object()) {
      s = Merge(&cfg, user, "", defaults, file);
      if (!s.ok()) return s;
    }
  }
  for (const auto& o : overrides) {
    s = ApplyOverride(&cfg, o, defaults);
    if (!s.ok()) return s;
  }
  ResolvePaths(&cfg);
  *out = std::move(cfg);
  return Status::Ok();
}

const nlohmann::json& ConfigAt(const nlohmann::json& cfg, const std::string& dotted) {
  static const nlohmann::json kNull;
  const nlohmann::json* v = Slot(const_cast<nlohmann::json*>(&cfg), dotted);
  return v ? *v : kNull;
}

}  // namespace kgym::train
