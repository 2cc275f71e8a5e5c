#include "skills/summary.h"

#include <cstdio>
#include <regex>

#include "skills/tool_call.h"

namespace kgym::skills {
namespace {

const char kSummarySystem[] =
    "You are an expert GPU kernel engineer. You are shown a multi-turn optimization trajectory in which a kernel "
    "was made substantially faster. Extract at most {M} GENERAL, REUSABLE skills from it that would help with "
    "OTHER kernel tasks.\n\n"
    "A good skill is broadly applicable, actionable (it says how, not only that) and not obvious. Its content is "
    "Markdown with the sections `## Motivation`, `## Key Idea` and `## Example` (a short self-contained code "
    "snippet).\n"
    "A skill is rejected if it: avoids CUDA/Triton (torch.compile, cuBLAS, falling back to PyTorch); is a "
    "task-specific hack (hard-coded shapes or block sizes); is an observation rather than a technique; is trivial "
    "advice such as \"use shared memory\"; skips computation or lowers precision without justification; or "
    "duplicates another skill (merge them instead).\n"
    "Pitfalls are worth documenting too: reduction order, fp16/bf16 overflow and non-associativity; races and "
    "missing __syncthreads(); indexing bugs for sizes that are not powers of two; bank conflicts, uncoalesced "
    "access and occupancy cliffs; Triton tl.constexpr, mask-shape and autotune pitfalls.\n\n"
    "Fill `think` first. Call `update_skill_library` exactly once. Answer in English.";

std::string Fmt2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool NonEmptyString(const nlohmann::json& item, const char* key) {
  auto it = item.find(key);
  return it != item.end() && it->is_string() &&
         it->get<std::string>().find_first_not_of(" \t\r\n") != std::string::npos;
}

}  // namespace

double TurnSpeedup(const TurnOutcome& t) { return t.correct && t.speedup > 0 ? t.speedup : 0.0; }

bool Qualifies(const Trajectory& t, const TriggerOptions& opts, SummaryCase* c) {
  if (t.turns.empty()) return false;
  const double turn1 = TurnSpeedup(t.turns[0]);
  size_t best_turn = 0;
  for (size_t i = 1; i < t.turns.size(); ++i)
    if (TurnSpeedup(t.turns[i]) > TurnSpeedup(t.turns[best_turn])) best_turn = i;
  const double best = TurnSpeedup(t.turns[best_turn]);
  if (opts.require_turn1_correct && !(turn1 > 0)) return false;
  if (!(best >= turn1 * opts.improve_over_turn1) || !(best >= opts.min_absolute)) return false;
  if (c) *c = SummaryCase{&t, turn1, best, best_turn};
  return true;
}

std::map<std::string, SummaryCase> SelectSummaryCases(const std::vector<Trajectory>& trajectories,
                                                      const TriggerOptions& opts) {
  std::map<std::string, SummaryCase> best;
  for (const auto& t : trajectories) {
    SummaryCase c;
    if (!Qualifies(t, opts, &c)) continue;
    auto it = best.find(t.task_uid);
    if (it == best.end() || c.best_speedup > it->second.best_speedup) best[t.task_uid] = c;
  }
  return best;
}

nlohmann::json UpdateSkillLibraryTool(const SummaryOptions& opts) {
  nlohmann::json str = {{"type", "string"}};
  return {{"type", "function"},
          {"function",
           {{"name", "update_skill_library"},
            {"description", "Add new general, reusable kernel optimization skills to the library."},
            {"parameters",
             {{"type", "object"},
              {"properties",
               {{"think", str},
                {"new_skills",
                 {{"type", "array"},
                  {"maxItems", opts.max_new_skills},
                  {"items",
                   {{"type", "object"},
                    {"properties",
                     {{"name", {{"type", "string"}, {"description", "unique snake_case name"}}},
                      {"description", {{"type", "string"}, {"description", "one line, at most 120 characters"}}},
                      {"scope", {{"type", "string"}, {"description", "general or task_specific/<type>"}}},
                      {"tags", {{"type", "array"}, {"items", str}, {"description", "3-6 snake_case keywords"}}},
                      {"content",
                       {{"type", "string"},
                        {"description", "Markdown with ## Motivation, ## Key Idea, ## Example; at most 512 tokens"}}}}},
                    {"required", {"name", "description", "scope", "tags", "content"}}}}}}}},
              {"required", {"think", "new_skills"}}}}}}};
}

nlohmann::json BuildSummaryMessages(const SummaryCase& c, const SummaryOptions& opts) {
  const Trajectory& t = *c.trajectory;
  std::string task;
  for (const auto& m : t.task_messages) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) continue;
    const std::string role = m.value("role", "");
    if (role != "system" && role != "user") continue;
    if (!task.empty()) task += "\n\n";
    task += (role == "system" ? "[SYSTEM]\n" : "[USER]\n") + m["content"].get<std::string>();
  }
  if (task.size() > opts.max_task_chars) task.resize(opts.max_task_chars);
  const std::string given = t.injected_skills && !t.injected_skills->empty()
                                ? *t.injected_skills
                                : "(no skills were injected — null scheme was used)";
  const std::string m = std::to_string(opts.max_new_skills);
  std::string user = "## Task\n\n" + task + "\n\n## Skills Already Given to the Policy Agent\n\n" + given +
                     "\n\n## Turn 1 Result (speedup: " + Fmt2(c.turn1_speedup) + "x)\n\n```python\n" + t.turns[0].code +
                     "\n```\n\n## Best Turn Result (speedup: " + Fmt2(c.best_speedup) + "x)\n\n```python\n" +
                     t.turns[c.best_turn].code + "\n```\n\nCall `update_skill_library` with at most " + m +
                     " new general skills that explain the improvement and would help on OTHER tasks.";
  std::string system = kSummarySystem;
  system.replace(system.find("{M}"), 3, m);
  return nlohmann::json::array({{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}});
}

bool IsLazySkill(const SkillRecord& s) {
  static const std::vector<std::regex> kLazy = [] {
    const char* patterns[] = {
        R"(fall(s|ing)?\s*back\s+to\s+(py)?torch)",
        R"(use\s+(torch\.compile|torch\s+compile|cublas|cudnn))",
        R"(avoid\s+(writing\s+)?(a\s+)?custom\s+kernels?)",
        R"(avoid\s+writing\s+(a\s+)?kernels?)",
        R"(skip\s+(the\s+)?(cuda|triton)(\s+kernels?)?)",
        R"((don'?t|do\s+not)\s+(call|write|use)\s+(a\s+)?(cuda|triton))",
        R"(not\s+write\s+(a\s+)?kernel)",
        R"(drop\s+the\s+(kernel|cuda|triton))",
        R"(skip\s+(the\s+)?(computation|ops?|operators?)\b)",
        R"(eliminate\s+the\s+(kernel|op)\s+entirely)",
    };
    std::vector<std::regex> v;
    for (const char* p : patterns) v.emplace_back(p, std::regex::icase | std::regex::ECMAScript);
    return v;
  }();
  const std::string text = Lower(s.name + "\n" + s.description + "\n" + s.content);
  for (const auto& re : kLazy)
    if (std::regex_search(text, re)) return true;
  return false;
}

ParsedSummary ParseSummaryResponse(const std::string& llm_text, const SummaryOptions& opts) {
  ParsedSummary out;
  auto call = FindToolCall(llm_text, "update_skill_library");
  if (!call) return out;
  out.call_found = true;
  auto it = call->arguments.find("new_skills");
  if (it == call->arguments.end() || !it->is_array()) {
    out.rejected.push_back("new_skills is not a list");
    return out;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& item = (*it)[i];
    const std::string where = "new_skills[" + std::to_string(i) + "]";
    if (i >= opts.max_new_skills) {
      out.rejected.push_back(where + ": beyond the first " + std::to_string(opts.max_new_skills));
      continue;
    }
    if (!item.is_object()) {
      out.rejected.push_back(where + ": not an object");
      continue;
    }
    bool complete = true;
    for (const char* f : {"name", "description", "scope", "content"})
      if (!NonEmptyString(item, f)) {
        out.rejected.push_back(where + ": field '" + f + "' missing or empty");
        complete = false;
        break;
      }
    if (!complete) continue;
    nlohmann::json rec = item;
    if (rec.contains("tags") && rec["tags"].is_string()) rec["tags"] = nlohmann::json::array({rec["tags"]});
    std::string scope = rec["scope"].get<std::string>();
    for (char& c : scope) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scope != "general" && (scope.rfind("task_specific/", 0) != 0 || scope.size() == 14)) scope = "general";
    rec["scope"] = scope;  // daVinci keeps any scope string; kgym folds unknown ones into "general"
    SkillRecord s;
    if (Status st = SkillFromJson(rec, &s); !st.ok()) {
      out.rejected.push_back(where + ": " + st.message());
      continue;
    }
    if (IsLazySkill(s)) {
      out.rejected.push_back(where + " '" + s.name + "': lazy skill (avoids writing a kernel)");
      continue;
    }
    out.skills.push_back(std::move(s));
  }
  return out;
}

}  // namespace kgym::skills
