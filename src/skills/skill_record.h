// SkillRecord: one entry of the skill library (research/davinci.md §1.1), its JSON form (one object per line of a
// snapshot), validation, name normalisation and the two text renderings the agents see (§1.3).
//
// Required fields: name, description, scope, content (non-empty strings). Optional: tags (list of strings),
// verify_speedup (finite number >= 0), source_uuid (string), and kgym's counters uses / successes (integers >= 0).
// Fields kgym does not know are kept in `extra` and written back unchanged, so a round trip loses nothing.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::skills {

struct SkillRecord {
  std::string name;               // unique within a snapshot; snake_case after NormalizeSkillName
  std::string description;        // one line
  std::string scope = "general";  // "general" or "task_specific/<type>"
  std::vector<std::string> tags;
  std::string content;                     // Markdown body (## Motivation, ## Key Idea, ## Example)
  std::optional<double> verify_speedup;    // speedup of the verification run that admitted the skill
  std::optional<std::string> source_uuid;  // offline-seeded skills: id of the source trajectory
  int64_t uses = 0;                        // times the skill was injected into a policy prompt (kgym extension)
  int64_t successes = 0;  // of those, how many trajectories met the caller's success rule (kgym extension)
  nlohmann::json extra = nlohmann::json::object();  // unknown fields, preserved

  nlohmann::json ToJson() const;
};

// Parses and validates one record. On error the message names the field ("skill 'x': field 'scope' ...").
Status SkillFromJson(const nlohmann::json& j, SkillRecord* out);

// Validates an in-memory record with the same rules as SkillFromJson.
Status ValidateSkill(const SkillRecord& s);

// daVinci's flush normalisation: lowercase, every char outside [A-Za-z0-9_-] becomes '_'.
std::string NormalizeSkillName(const std::string& name);

// The injected form (§1.3): a '---' front-matter block (name, description, scope, tags as "[a, b]"), a blank
// line, the stripped content and a trailing newline. Used for injection and for verification prompts alike.
std::string RenderSkill(const SkillRecord& s);

// The selection agent's view of the candidates: numbered headers without bodies, or "(skill library is empty)".
std::string RenderCandidateList(const std::vector<const SkillRecord*>& candidates);

// The text BM25 indexes for a skill: name, description, tags and the full content, space-joined (§2).
std::string IndexedText(const SkillRecord& s);

}  // namespace kgym::skills
