// Execution-based verification, staging and flush of new skills (research/davinci.md §5.6–§5.7), plus three
// extensions daVinci lacks: near-duplicate rejection by BM25 similarity, per-skill usage/success counters, and
// an option to require that a skill also passes verification on a second task.
//
//   text  = VerificationInjection(case.injected, skill)  prompt injection for the greedy turn-1 regeneration
//   ok    = VerificationPasses(run)                      correct, >= 1.2x absolute and >= 1.2x turn 1
//   AdmitCandidate(candidate)                           all runs of a candidate -> admitted + verify_speedup
//   staging.Offer(task, skill); staging.RecordUsage(...)
//   FlushStaged(library, staging)                        the complete next snapshot (names normalised)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "skills/skill_record.h"
#include "skills/summary.h"

namespace kgym::skills {

// Injection for verifying `skill` on top of what the winning scheme already had: original + "\n\n---\n\n" +
// RenderSkill(skill), or RenderSkill(skill) alone when nothing was injected.
std::string VerificationInjection(const std::optional<std::string>& original_injected, const SkillRecord& skill);

struct VerifyOptions {
  double min_absolute = 1.2;         // speedup >= this
  double min_vs_turn1 = 1.2;         // speedup >= turn1 * this
  bool require_second_task = false;  // also pass on a task other than the one the skill came from
};

// One greedy turn-1 regeneration with the candidate injected, evaluated on the gym.
struct VerificationRun {
  std::string task_uid;
  bool correct = false;
  double speedup = 0;        // of the regenerated kernel
  double turn1_speedup = 0;  // baseline on that task: the source trajectory's turn 1 (or, on a second task,
                             // a greedy turn 1 with the task's original injection)
};

bool VerificationPasses(const VerificationRun& run, const VerifyOptions& opts = {});

struct CandidateSkill {
  SkillRecord skill;
  std::string origin_task;
  std::vector<VerificationRun> runs;
};

struct Admission {
  bool admitted = false;
  double verify_speedup = 0;  // best passing speedup on the origin task
  std::string reason;         // why not, when not admitted
};
Admission AdmitCandidate(const CandidateSkill& c, const VerifyOptions& opts = {});

// A task other than `origin` for the second-task check, chosen deterministically from `seed`; nullopt when
// there is none.
std::optional<std::string> ChooseSecondTask(const std::string& origin, const std::vector<std::string>& tasks,
                                            uint64_t seed);

// Skills waiting for the next flush (only the best verified one per task is kept) and usage deltas.
class SkillStaging {
 public:
  // Keeps `skill` (its verify_speedup set) if no skill is staged for `task_uid` yet or it beats the staged one.
  void Offer(const std::string& task_uid, SkillRecord skill, double verify_speedup);
  // One use of each named skill in a policy trajectory, which succeeded or not.
  void RecordUsage(const std::vector<std::string>& names, bool succeeded);
  void Merge(const SkillStaging& other);  // e.g. draining other workers' staging areas

  std::vector<SkillRecord> Staged() const;  // in task-uid order
  const std::map<std::string, std::pair<int64_t, int64_t>>& usage() const { return usage_; }
  bool empty() const { return staged_.empty() && usage_.empty(); }
  void Clear();

 private:
  std::map<std::string, SkillRecord> staged_;                 // task uid -> best verified skill
  std::map<std::string, std::pair<int64_t, int64_t>> usage_;  // name -> (uses, successes)
};

// Usage rule for counters: a trajectory succeeds when some turn is correct with speedup >= min_speedup.
bool TrajectorySucceeded(const Trajectory& t, double min_speedup = 1.0);

// Name of the existing skill most similar to `candidate` if its BM25 similarity reaches `threshold`:
// similarity = score(candidate text -> other) / score(candidate text -> itself) over an index of
// `existing` + candidate with always-positive idf (so tiny libraries still give a signal). threshold <= 0 off.
std::optional<std::string> NearDuplicateOf(const std::vector<SkillRecord>& existing, const SkillRecord& candidate,
                                           double threshold);

struct FlushOptions {
  double near_duplicate_threshold = 0.6;  // 0 disables (daVinci: names only)
};

struct FlushResult {
  std::vector<SkillRecord> skills;      // the complete next snapshot
  std::vector<std::string> added;       // final names of new skills
  std::vector<std::string> duplicates;  // "<staged name> ~ <existing name>" for rejected near-duplicates
};

// Old skills (usage counters applied) followed by the staged ones: name normalised (NormalizeSkillName), "_1",
// "_2", ... appended while taken, near-duplicates dropped. Write the result with WriteSnapshot(dir, step + 1).
FlushResult FlushStaged(const std::vector<SkillRecord>& library, const SkillStaging& staging,
                        const FlushOptions& opts = {});

}  // namespace kgym::skills
