// RunFolder: what a run's output folder holds, read for people (the dashboard's run view, `kgym view`, the
// reports of `kgym grade`). Three kinds of folder, told apart by their files:
//   agent / grade run   RUN/config.json, RUN/trajectories.jsonl (agent/run_dir.h), RUN/grade.json
//   training run        RUN/config.json, RUN/metrics.jsonl (one object per step: "step", "time" and flat numeric
//                       keys namespaced with '/', e.g. "reward/mean", "val/fast@1.2"),
//                       RUN/rollouts/step_<N>/trajectories.jsonl, RUN/val/step_<N>/trajectories.jsonl
// A trajectory file is a "source", named by its folder relative to the run ("trajectories" for the run's own).
//
// Reading never fails on damaged content: a line that is not JSON, or a last line cut off by a killed writer,
// is skipped and described in `warnings` (file and line number), so the rest of the run still shows.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "grade/metrics.h"

namespace kgym::grade {

// The JSON objects of a .jsonl file, in file order. Unreadable lines become warnings naming `label` and the line.
Status ReadJsonl(const std::string& path, const std::string& label, std::vector<nlohmann::json>* records,
                 std::vector<std::string>* warnings);

// Trajectory records of a file or folder, the latest per "key" (as agent::RunDir keeps them), in key order.
Status ReadTrajectories(const std::string& path, std::vector<nlohmann::json>* records,
                        std::vector<std::string>* warnings);

struct RunFolder {
  std::string path, name;
  std::string kind;                  // "training" (has metrics.jsonl) or "agent"
  nlohmann::json config;             // config.json, {} when absent or unreadable (then a warning)
  std::vector<std::string> sources;  // "trajectories", then "rollouts/step_N" and "val/step_N" by step
  std::vector<std::string> warnings;
};

// NotFound unless `path` is a folder with trajectories.jsonl, metrics.jsonl or rollouts/ or val/ step folders.
Status OpenRunFolder(const std::string& path, RunFolder* out);

// The source the run view opens first: the run's own trajectories, else the latest val step, else the latest
// rollout step; "" when the run has none.
std::string DefaultSource(const RunFolder& run);

// The trajectories.jsonl of a source; InvalidArgument for a name that is not one of run.sources.
Status SourceFile(const RunFolder& run, const std::string& source, std::string* file);

// metrics.jsonl as a table: {"rows": [{step, time, key: value...}], "keys": [numeric keys, sorted],
// "groups": {prefix before the first '/' (or "other"): [keys]}}. Rows without an integer "step" are warnings.
nlohmann::json MetricsTable(const std::vector<nlohmann::json>& records, std::vector<std::string>* warnings);

// What the run view and the reports show of a set of trajectories: {"grade": Grade(), "leaderboard":
// Leaderboard(), "hack_families": HackFamilies()}.
nlohmann::json TrajectoryReport(const std::vector<nlohmann::json>& trajectories, const GradeOptions& opt);

// Everything the run view and the reports show of one source: TrajectoryReport's keys (null / empty when the run
// has no trajectories), "metrics" (MetricsTable of a training run, else null) and "run": {name, path, kind,
// config, sources, source, warnings}. `source` "" = DefaultSource. Warnings of every file read are in
// run.warnings.
Status RunReportData(const RunFolder& run, const std::string& source, const GradeOptions& opt, nlohmann::json* out);

// One line per trajectory for a list: {key, task_id, level, sample, status, turns, best_speedup, final_reward,
// final_outcome}.
nlohmann::json TrajectorySummary(const nlohmann::json& record);

}  // namespace kgym::grade
