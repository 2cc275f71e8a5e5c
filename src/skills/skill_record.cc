#include "skills/skill_record.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace kgym::skills {
namespace {

const char* const kKnownFields[] = {"name",           "description", "scope", "tags",     "content",
                                    "verify_speedup", "source_uuid", "uses",  "successes"};

bool IsKnown(const std::string& key) {
  for (const char* k : kKnownFields)
    if (key == k) return true;
  return false;
}

std::string Label(const std::string& name) { return name.empty() ? "skill" : "skill '" + name + "'"; }

Status FieldError(const std::string& name, const char* field, const std::string& why) {
  return Status::InvalidArgument(Label(name) + ": field '" + field + "' " + why);
}

Status RequiredString(const nlohmann::json& j, const std::string& name, const char* field, std::string* out) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(name, field, "is missing (a non-empty string is required)");
  if (!it->is_string()) return FieldError(name, field, "must be a string, got " + std::string(it->type_name()));
  *out = it->get<std::string>();
  return Status::Ok();
}

Status Counter(const nlohmann::json& j, const std::string& name, const char* field, int64_t* out) {
  auto it = j.find(field);
  if (it == j.end()) return Status::Ok();
  if (!it->is_number_integer()) return FieldError(name, field, "must be an integer >= 0");
  *out = it->get<int64_t>();
  return Status::Ok();
}

bool Blank(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isspace(c)) return false;
  return true;
}

std::string Strip(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace

nlohmann::json SkillRecord::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  j["name"] = name;
  j["description"] = description;
  j["scope"] = scope;
  j["tags"] = tags;
  j["content"] = content;
  if (verify_speedup) j["verify_speedup"] = *verify_speedup;
  if (source_uuid) j["source_uuid"] = *source_uuid;
  if (uses) j["uses"] = uses;
  if (successes) j["successes"] = successes;
  for (auto& [k, v] : extra.items())
    if (!IsKnown(k)) j[k] = v;
  return j;
}

Status ValidateSkill(const SkillRecord& s) {
  if (Blank(s.name)) return FieldError(s.name, "name", "must be a non-empty string");
  if (Blank(s.description)) return FieldError(s.name, "description", "must be a non-empty string");
  if (Blank(s.content)) return FieldError(s.name, "content", "must be a non-empty string");
  if (s.scope != "general") {
    const std::string prefix = "task_specific/";
    if (s.scope.rfind(prefix, 0) != 0 || s.scope.size() == prefix.size())
      return FieldError(s.name, "scope", "must be \"general\" or \"task_specific/<type>\", got \"" + s.scope + "\"");
  }
  for (size_t i = 0; i < s.tags.size(); ++i)
    if (Blank(s.tags[i])) return FieldError(s.name, "tags", "entry " + std::to_string(i) + " is empty");
  if (s.verify_speedup && (!std::isfinite(*s.verify_speedup) || *s.verify_speedup < 0))
    return FieldError(s.name, "verify_speedup", "must be a finite number >= 0");
  if (s.uses < 0) return FieldError(s.name, "uses", "must be an integer >= 0");
  if (s.successes < 0 || s.successes > s.uses)
    return FieldError(s.name, "successes", "must be an integer between 0 and uses");
  return Status::Ok();
}

Status SkillFromJson(const nlohmann::json& j, SkillRecord* out) {
  if (!j.is_object()) return Status::InvalidArgument("skill: a record must be a JSON object");
  SkillRecord s;
  if (auto st = RequiredString(j, "", "name", &s.name); !st.ok()) return st;
  if (auto st = RequiredString(j, s.name, "description", &s.description); !st.ok()) return st;
  if (auto st = RequiredString(j, s.name, "scope", &s.scope); !st.ok()) return st;
  if (auto st = RequiredString(j, s.name, "content", &s.content); !st.ok()) return st;
  if (auto it = j.find("tags"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return FieldError(s.name, "tags", "must be a list of strings");
    for (auto& t : *it) {
      if (!t.is_string()) return FieldError(s.name, "tags", "must be a list of strings");
      s.tags.push_back(t.get<std::string>());
    }
  }
  if (auto it = j.find("verify_speedup"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) return FieldError(s.name, "verify_speedup", "must be a number");
    s.verify_speedup = it->get<double>();
  }
  if (auto it = j.find("source_uuid"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError(s.name, "source_uuid", "must be a string");
    s.source_uuid = it->get<std::string>();
  }
  if (auto st = Counter(j, s.name, "uses", &s.uses); !st.ok()) return st;
  if (auto st = Counter(j, s.name, "successes", &s.successes); !st.ok()) return st;
  for (auto& [k, v] : j.items())
    if (!IsKnown(k)) s.extra[k] = v;
  if (auto st = ValidateSkill(s); !st.ok()) return st;
  *out = std::move(s);
  return Status::Ok();
}

std::string NormalizeSkillName(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '_' || c == '-')
      out.push_back(static_cast<char>(std::tolower(c)));
    else
      out.push_back('_');
  }
  return out;
}

std::string RenderSkill(const SkillRecord& s) {
  std::string tags = "[";
  for (size_t i = 0; i < s.tags.size(); ++i) tags += (i ? ", " : "") + s.tags[i];
  tags += "]";
  return "---\nname: " + s.name + "\ndescription: " + s.description + "\nscope: " + s.scope + "\ntags: " + tags +
         "\n---\n\n" + Strip(s.content) + "\n";
}

std::string RenderCandidateList(const std::vector<const SkillRecord*>& candidates) {
  if (candidates.empty()) return "(skill library is empty)";
  std::string out;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const SkillRecord& s = *candidates[i];
    char num[32];
    std::snprintf(num, sizeof num, "%2zu", i + 1);
    if (i) out += "\n";
    out += std::string(num) + ". **" + s.name + "**  [scope=" + s.scope + "]";
    if (!s.tags.empty()) {
      out += "  [tags: ";
      for (size_t t = 0; t < s.tags.size(); ++t) out += (t ? ", " : "") + s.tags[t];
      out += "]";
    }
    out += "\n    " + s.description;
  }
  return out;
}

std::string IndexedText(const SkillRecord& s) {
  std::string tags;
  for (size_t i = 0; i < s.tags.size(); ++i) tags += (i ? " " : "") + s.tags[i];
  return s.name + " " + s.description + " " + tags + " " + s.content;
}

}  // namespace kgym::skills
