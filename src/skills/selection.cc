#include "skills/selection.h"

#include <algorithm>
#include <random>
#include <set>

#include "skills/tool_call.h"

namespace kgym::skills {
namespace {

const char kSelectionSystem[] =
    "You are an expert GPU kernel engineer who writes CUDA and Triton kernels. You are given a kernel "
    "optimization task and a numbered list of candidate skills from a skill library (name, description, tags and "
    "scope; not their full text). Choose the top {K} skills most likely to help with this task.\n\n"
    "Judge each candidate by: relevance to the operator or computation pattern of the task; the likely size of "
    "its effect on speed; complementarity with the other picks (for example one about memory traffic, one about "
    "compute, one about a correctness pitfall).\n"
    "Do not pick skills because they sound impressive, do not pick skills that avoid writing CUDA/Triton code "
    "(for example torch.compile or library fallbacks), and do not pick more than {K}.\n\n"
    "First fill `think` with the task's main bottleneck and why your picks address it, then list the picks, each "
    "with a one-sentence reason. You will be called several times for the same task: make an independent "
    "selection so that different strategies get explored. Call `select_skills` exactly once. Answer in English.";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  return s;
}

// A UTF-8-safe prefix of at most max_bytes bytes.
std::string Utf8Prefix(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

std::string TaskQuery(const nlohmann::json& messages, size_t max_chars) {
  if (!messages.is_array()) return "";
  for (const auto& m : messages)
    if (m.is_object() && m.value("role", "") == "user" && m.contains("content") && m["content"].is_string())
      return Utf8Prefix(m["content"].get<std::string>(), max_chars);
  return "";
}

std::vector<const SkillRecord*> SelectionCandidates(const SkillLibrary& lib, const std::string& query,
                                                    uint32_t scheme_index, const SelectionOptions& opts) {
  std::vector<const SkillRecord*> out;
  for (const SearchHit& h : lib.Search(query, opts.top_bm25)) out.push_back(h.skill);
  if (!out.empty()) return out;
  for (const auto& s : lib.skills()) out.push_back(&s);
  if (out.size() > opts.max_shown) {
    std::mt19937_64 rng(scheme_index);
    for (size_t i = 0; i < opts.max_shown; ++i) {  // partial Fisher-Yates
      std::uniform_int_distribution<size_t> pick(i, out.size() - 1);
      std::swap(out[i], out[pick(rng)]);
    }
    out.resize(opts.max_shown);
  }
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

nlohmann::json SelectSkillsTool(const SelectionOptions& opts) {
  return {{"type", "function"},
          {"function",
           {{"name", "select_skills"},
            {"description", "Select the skills from the candidate list that are most likely to help with the task."},
            {"parameters",
             {{"type", "object"},
              {"properties",
               {{"think", {{"type", "string"}, {"description", "The task's key bottleneck and why the picks help."}}},
                {"selected_skills",
                 {{"type", "array"},
                  {"maxItems", opts.top_k_select},
                  {"items",
                   {{"type", "object"},
                    {"properties",
                     {{"name",
                       {{"type", "string"}, {"description", "exact snake_case skill name from the candidate list"}}},
                      {"reason", {{"type", "string"}, {"description", "one sentence"}}}}},
                    {"required", {"name", "reason"}}}}}}}},
              {"required", {"think", "selected_skills"}}}}}}};
}

nlohmann::json BuildSelectionMessages(const std::string& task_description,
                                      const std::vector<const SkillRecord*>& candidates, const SelectionOptions& opts) {
  const std::string k = std::to_string(opts.top_k_select);
  std::string user = "## Task\n\n" + task_description + "\n\n---\n\n## Candidate Skills (from the library)\n\n" +
                     RenderCandidateList(candidates) + "\n\n---\n\nCall `select_skills` with the top " + k +
                     " skills for this task.";
  return nlohmann::json::array(
      {{{"role", "system"}, {"content", Replace(kSelectionSystem, "{K}", k)}}, {{"role", "user"}, {"content", user}}});
}

std::vector<std::string> ParseSelection(const std::string& llm_text, const SkillLibrary& lib) {
  std::vector<std::string> names;
  auto call = FindToolCall(llm_text, "select_skills");
  if (!call) return names;
  const auto it = call->arguments.find("selected_skills");
  if (it == call->arguments.end() || !it->is_array()) return names;
  std::set<std::string> seen;
  for (const auto& item : *it) {
    std::string name;
    if (item.is_object() && item.contains("name") && item["name"].is_string())
      name = item["name"].get<std::string>();
    else if (item.is_string())
      name = item.get<std::string>();
    if (!name.empty() && lib.Find(name) && seen.insert(name).second) names.push_back(name);
  }
  return names;
}

std::string RenderInjection(const SkillLibrary& lib, const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    if (const SkillRecord* s = lib.Find(n)) out += (out.empty() ? "" : "\n\n") + RenderSkill(*s);
  return out;
}

nlohmann::json InjectSkills(const nlohmann::json& messages, const std::string& skills_text) {
  if (skills_text.empty() || !messages.is_array()) return messages;
  const std::string block =
      "\n\n---\n## [Skill Library] Potentially Relevant Optimization Techniques\n\n"
      "The techniques below are optional references distilled from earlier successful optimizations; apply one "
      "only where it fits this task.\n\n" +
      skills_text + "\n\n---";
  nlohmann::json out = messages;
  for (auto& m : out)
    if (m.is_object() && m.value("role", "") == "system" && m.contains("content") && m["content"].is_string()) {
      m["content"] = m["content"].get<std::string>() + block;
      return out;
    }
  for (auto& m : out)
    if (m.is_object() && m.value("role", "") == "user" && m.contains("content") && m["content"].is_string()) {
      std::string content = m["content"].get<std::string>();
      size_t pos = content.rfind(kInjectionSentinel);
      if (pos == std::string::npos)
        content += block;
      else
        content = content.substr(0, pos) + block + "\n\n" + content.substr(pos);
      m["content"] = content;
      return out;
    }
  return out;
}

std::vector<SchemePrompt> BuildSchemes(const std::string& task_uid, const nlohmann::json& messages,
                                       const std::vector<std::vector<std::string>>& selections,
                                       const SkillLibrary& lib) {
  std::vector<SchemePrompt> out;
  for (size_t j = 0; j <= selections.size(); ++j) {
    SchemePrompt p;
    p.uid = task_uid + "_scheme" + std::to_string(j);
    if (j < selections.size()) p.skills = selections[j];
    p.injected = RenderInjection(lib, p.skills);
    p.messages = InjectSkills(messages, p.injected);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kgym::skills
