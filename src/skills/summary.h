// The skill summary step (research/davinci.md §5.1–§5.5) as pure functions:
//   cases  = SelectSummaryCases(trajectories)        trigger rule, best qualifying trajectory per task
//   prompt = BuildSummaryMessages(case)              [system, user]; tool = UpdateSkillLibraryTool()
//   skills = ParseSummaryResponse(llm_text)          update_skill_library call, first M, required fields,
//                                                    lazy-skill filter
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "skills/skill_record.h"

namespace kgym::skills {

struct TurnOutcome {
  bool correct = false;
  double speedup = 0;  // reference / kernel runtime as the gym reports it
  std::string code;    // the python block of that turn's response
};

struct Trajectory {
  std::string task_uid;  // original task uid (without the _scheme suffix)
  int scheme = 0;
  nlohmann::json task_messages = nlohmann::json::array();  // the task as given, without injected skills
  std::vector<TurnOutcome> turns;
  std::optional<std::string> injected_skills;  // what the scheme injected (nullopt: null scheme / none)
  std::vector<std::string> skill_names;        // names of the injected skills (for usage counters)
};

// A turn counts only when correct: its speedup is 0 otherwise.
double TurnSpeedup(const TurnOutcome& t);

struct TriggerOptions {
  double improve_over_turn1 = 1.2;    // best >= turn1 * this
  double min_absolute = 1.2;          // best >= this (vs. eager PyTorch)
  bool require_turn1_correct = true;  // turn1 > 0
};

struct SummaryCase {
  const Trajectory* trajectory = nullptr;
  double turn1_speedup = 0;
  double best_speedup = 0;
  size_t best_turn = 0;  // index into turns
};

// Whether a trajectory triggers a summary; fills `c` when it does.
bool Qualifies(const Trajectory& t, const TriggerOptions& opts, SummaryCase* c = nullptr);

// Per task uid, the qualifying trajectory with the highest best speedup (the first on ties). Pointers refer into
// `trajectories`.
std::map<std::string, SummaryCase> SelectSummaryCases(const std::vector<Trajectory>& trajectories,
                                                      const TriggerOptions& opts = {});

struct SummaryOptions {
  size_t max_new_skills = 2;  // M: per call
  size_t max_task_chars = 400000;
};

nlohmann::json UpdateSkillLibraryTool(const SummaryOptions& opts = {});
nlohmann::json BuildSummaryMessages(const SummaryCase& c, const SummaryOptions& opts = {});

// True when the skill tells the policy not to write a kernel (fall back to PyTorch, torch.compile, cuBLAS, skip
// the computation, ...): matched case-insensitively over name + description + content.
bool IsLazySkill(const SkillRecord& s);

struct ParsedSummary {
  std::vector<SkillRecord> skills;    // accepted candidates, at most max_new_skills
  std::vector<std::string> rejected;  // one line per dropped item, saying why
  bool call_found = false;
};
ParsedSummary ParseSummaryResponse(const std::string& llm_text, const SummaryOptions& opts = {});

}  // namespace kgym::skills
