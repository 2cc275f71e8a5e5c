// The skill selection step (research/davinci.md §2–§4) as pure functions over plain data, so the agent can wire
// its LLM client around them:
//   query      = TaskQuery(messages)                       first user message, at most 100 000 chars
//   candidates = SelectionCandidates(lib, query, j, opts)  BM25 top 20 (> 0), else the fallback list
//   prompt     = BuildSelectionMessages(query, candidates) [system, user]; tool = SelectSkillsTool()
//   names      = ParseSelection(llm_text, lib)             select_skills call, names kept iff in the library
//   messages'  = InjectSkills(messages, RenderInjection(lib, names))
// Messages are OpenAI-style JSON arrays of {"role", "content"}.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "skills/skill_library.h"

namespace kgym::skills {

struct SelectionOptions {
  size_t top_bm25 = 20;     // BM25 candidates shown to the selector
  size_t max_shown = 30;    // fallback: at most this many skills when BM25 finds nothing
  size_t top_k_select = 3;  // skills the selector may pick (schema maxItems)
  size_t max_query_chars = 100000;
};

// The text BM25 is queried with: the first user message's content, truncated.
std::string TaskQuery(const nlohmann::json& messages, size_t max_chars = 100000);

// BM25 top `top_bm25` with score > 0; when there is none, the whole library, or (if larger than max_shown) a
// sample of max_shown skills drawn with a generator seeded by scheme_index, sorted by name. The sample is
// deterministic per scheme but is not Python's random.Random stream.
std::vector<const SkillRecord*> SelectionCandidates(const SkillLibrary& lib, const std::string& query,
                                                    uint32_t scheme_index, const SelectionOptions& opts = {});

// The `select_skills` tool schema (OpenAI "function" tool form).
nlohmann::json SelectSkillsTool(const SelectionOptions& opts = {});

// [system, user] messages of one selection call.
nlohmann::json BuildSelectionMessages(const std::string& task_description,
                                      const std::vector<const SkillRecord*>& candidates,
                                      const SelectionOptions& opts = {});

// Names chosen by a `select_skills` call in `llm_text`, in the order given, without repeats, keeping only names
// that exist exactly in `lib` (not only among the shown candidates). Unreadable text gives an empty list.
std::vector<std::string> ParseSelection(const std::string& llm_text, const SkillLibrary& lib);

// The injected text of a scheme: the rendered skills joined by a blank line ("" for none).
std::string RenderInjection(const SkillLibrary& lib, const std::vector<std::string>& names);

// Sentinel before which the skill block goes in a KernelBench prompt.
inline constexpr const char* kInjectionSentinel = "Optimize the architecture named Model";

// Returns `messages` with the skill block added: appended to a system message if there is one, else inserted
// into the first user message immediately before the last occurrence of kInjectionSentinel (block + "\n\n" +
// rest), or appended to it when the sentinel is absent. Empty `skills_text` returns `messages` unchanged.
nlohmann::json InjectSkills(const nlohmann::json& messages, const std::string& skills_text);

// The k+1 first-turn prompts of a task: one per selection (injected; empty selections stay plain), then the null
// scheme (plain). uid of scheme j is "<uid>_scheme<j>".
struct SchemePrompt {
  std::string uid;
  std::vector<std::string> skills;
  std::string injected;  // "" for none
  nlohmann::json messages;
};
std::vector<SchemePrompt> BuildSchemes(const std::string& task_uid, const nlohmann::json& messages,
                                       const std::vector<std::vector<std::string>>& selections,
                                       const SkillLibrary& lib);

}  // namespace kgym::skills
