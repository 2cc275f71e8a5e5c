// One round of library evolution over a finished agent run (`kgym skills evolve`; research/davinci.md §5):
//   1. read RUN_DIR/trajectories.jsonl (and the tasks named in RUN_DIR/config.json, or `tasks_path`);
//   2. usage counters: every trajectory that had skills injected counts one use of each, a success when some
//      turn was correct with speedup >= usage_success_speedup;
//   3. trigger: per task the best qualifying trajectory (best >= 1.2x turn 1, best >= 1.2x, turn 1 correct);
//   4. `summaries_per_task` sampled update_skill_library calls per triggered task, parsed, lazy skills dropped;
//   5. verification of every candidate: one greedy turn-1 regeneration of the origin task with the scheme's
//      original skills plus the candidate injected, evaluated on the gym; passes at >= 1.2x absolute and
//      >= 1.2x the trajectory's turn 1. With require_second_task, also on one other task of the run, against a
//      greedy turn 1 of that task without the candidate;
//   6. stage the best verified skill per task, flush: old skills (counters updated) + staged ones, names
//      normalised, near-duplicates (BM25 similarity) dropped, written as the next snapshot.
// A report of every decision is returned and written to RUN_DIR/evolve.json; each summary entry carries its
// response text and daVinci's summary reward (the verify_speedup of its best admitted skill, else 0) for training. A
// run directory that already has evolve.json is refused unless `force` (its usage counters would otherwise count
// twice).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "agent/chat_client.h"
#include "agent/eval_backend.h"
#include "core/evaluation.h"
#include "core/status.h"
#include "skills/summary.h"
#include "skills/verification.h"

namespace kgym::skills {

struct EvolveOptions {
  std::string run_dir;
  std::string library_dir;
  std::string tasks_path;  // "" = the "tasks" entry of RUN_DIR/config.json
  int64_t step = -1;       // snapshot to extend (newest <= step; -1 newest); the result is written as step + 1
  TriggerOptions trigger;
  SummaryOptions summary;
  VerifyOptions verify;
  FlushOptions flush;
  int summaries_per_task = 8;              // s
  agent::SamplingParams summary_sampling;  // daVinci: temperature 1.0, 2048 new tokens
  agent::SamplingParams verify_sampling;   // greedy: temperature 0, 8192 new tokens
  EvalRequest eval;                        // template for verification evaluations (device, trials, timeout)
  double usage_success_speedup = 1.0;
  int concurrency = 8;  // LLM calls / evaluations in flight
  bool send_tool_schema = true;
  bool force = false;
  uint64_t seed = 0;  // second-task choice
  EvolveOptions() {
    summary_sampling.temperature = 1.0;
    summary_sampling.top_p = 1.0;
    summary_sampling.max_tokens = 2048;
    verify_sampling.temperature = 0.0;
    verify_sampling.top_p = 1.0;
    verify_sampling.max_tokens = 8192;
  }
};

// Runs one round. `report` receives the decisions (cases, candidates, runs, admitted, added, snapshot path).
Status RunEvolve(const EvolveOptions& opts, const agent::ChatClient& llm, agent::EvalBackend* gym,
                 nlohmann::json* report);

// A trajectory record of an agent run (RunDir) as the summary step sees it: turns with correctness (decoys
// count as incorrect), speedup and code; the un-injected task prompt and the injected skills from the record's
// "first_turn" note when there is one. Abnormal turns are skipped.
Trajectory TrajectoryFromRecord(const nlohmann::json& rec);

}  // namespace kgym::skills
