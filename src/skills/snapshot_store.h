// Snapshots of the skill library on disk (research/davinci.md §1.2): a directory of `global_step_<N>.jsonl`
// files, each a complete library (one SkillRecord JSON object per line). Writes are atomic (temporary file,
// fsync, rename, fsync of the directory), so a reader sees either the old or the new snapshot, never a torn one.
// Nothing here holds state; concurrent writers of the same step must be serialised by the caller.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "skills/skill_record.h"

namespace kgym::skills {

struct LoadedSnapshot {
  int64_t step = -1;  // -1 when no snapshot qualified (the library is then empty)
  std::string path;   // file that was read, "" if none
  std::vector<SkillRecord> skills;
  int skipped_lines = 0;    // lines that were not valid records (daVinci skips them too)
  int duplicate_names = 0;  // later occurrences of a name already read (first occurrence wins)
};

// Path of the snapshot for `step` inside `dir`.
std::string SnapshotPath(const std::string& dir, int64_t step);

// Steps of all snapshot files in `dir`, ascending. A missing directory is an empty list, not an error.
Status ListSnapshotSteps(const std::string& dir, std::vector<int64_t>* steps);

// Loads the newest snapshot with step <= max_step (max_step < 0: the newest of all). With no qualifying file the
// result is an empty library with step -1 and Status ok.
Status LoadSnapshot(const std::string& dir, int64_t max_step, LoadedSnapshot* out);

// daVinci's load_for_step: the bound is min(step, start_step) when start_step > 0, else step.
Status LoadForStep(const std::string& dir, int64_t step, int64_t start_step, LoadedSnapshot* out);

// Writes the complete library as the snapshot for `step` (replacing one that exists), creating `dir` if needed.
// Every record is validated first; names must be unique. On any error nothing in `dir` changes.
Status WriteSnapshot(const std::string& dir, int64_t step, const std::vector<SkillRecord>& skills);

}  // namespace kgym::skills
