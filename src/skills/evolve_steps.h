// The named steps of one round of library evolution (RunEvolve in skills/evolve.h reads as their list). Each step
// takes what the steps before it produced, returns its own product and writes its own part of the round's report
// (evolve.json), so each can be tested alone; the ones that call the LLM or the gym take them as arguments.
//
//   LoadRun            RUN_DIR's trajectories and the run's tasks           (report: trajectories)
//   LoadBase           the snapshot to extend                                (report: base_step, base_skills, ...)
//   CountUsage         usage counters of the skills the run injected        (report: usage)
//   TriggeredCases     the trigger rule's cases whose task is known          (report: cases)
//   SampleSummaries    s summary calls per case                              (LLM)
//   CandidatesFrom     one candidate per parsed skill                        (report: summaries)
//   PlanVerification   (candidate, task) jobs and the second tasks' baselines
//   Verify             greedy turn-1 regenerations on the gym               (LLM + gym)
//   AdmitAndStage      admission, summary rewards, staging                   (report: candidates, staged, ...)
//   WriteNextSnapshot  flush: the next snapshot                              (report: snapshot, step, added, ...)
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "agent/chat_client.h"
#include "agent/eval_backend.h"
#include "agent/task.h"
#include "core/status.h"
#include "skills/evolve.h"
#include "skills/snapshot_store.h"
#include "skills/summary.h"
#include "skills/verification.h"

namespace kgym::skills::evolve {

// What the round reads from an agent run. `tasks` points into `task_list`: a RunInputs is moved, never copied.
struct RunInputs {
  std::vector<Trajectory> trajectories;                  // records with a task and at least one scored turn
  std::vector<agent::Task> task_list;                    // the run's tasks
  std::map<std::string, const agent::Task*> tasks;       // by id
  std::set<std::string> run_tasks;                       // known tasks that have a trajectory (second-task pool)
  std::map<std::string, nlohmann::json> plain_messages;  // task -> its un-injected prompt (from any trajectory)
  RunInputs() = default;
  RunInputs(RunInputs&&) = default;
  RunInputs& operator=(RunInputs&&) = default;
  RunInputs(const RunInputs&) = delete;
};

// Refuses a run that already has evolve.json (unless opts.force) or no trajectories.jsonl; reads the trajectories
// and the tasks (opts.tasks_path, else the "tasks" of RUN_DIR/config.json).
Status LoadRun(const EvolveOptions& opts, RunInputs* in);

// The snapshot to extend (newest <= opts.step) and the step it counts as; refuses when the next step exists.
Status LoadBase(const EvolveOptions& opts, LoadedSnapshot* snap, int64_t* base_step);

// Every trajectory that had skills of `library` injected counts one use of each, a success when some turn was
// correct at >= success_speedup. Returns the report's "usage": {name: {uses, successes}}.
nlohmann::json CountUsage(const std::vector<Trajectory>& trajectories, const std::vector<SkillRecord>& library,
                          double success_speedup, SkillStaging* staging);

// The trigger's cases (per task, SelectSummaryCases) whose task is known (a case cannot be verified without its
// reference), in task order; `report_cases` gets one entry per case.
std::vector<const SummaryCase*> TriggeredCases(const std::map<std::string, SummaryCase>& cases, const RunInputs& in,
                                               nlohmann::json* report_cases);

// One summary call's outcome.
struct SummaryReply {
  ParsedSummary parsed;
  std::string response;  // the text parsed (a structured tool call rendered as text when the content had none)
  std::string error;     // the call failed
};

// opts.summaries_per_task calls per case (reply i belongs to case i / per_case), opts.concurrency in flight; a seed
// set in opts.summary_sampling is advanced by the reply's index.
std::vector<SummaryReply> SampleSummaries(const std::vector<const SummaryCase*>& cases, const EvolveOptions& opts,
                                          const agent::ChatClient& llm);

// One greedy turn-1 generation of a task with some injected skill text, evaluated on the gym.
struct Regeneration {
  bool ok = false;  // a verdict was reached
  bool correct = false;
  double speedup = 0;
  std::string error;
  std::string eval_task_id;
};

struct Candidate {
  size_t case_index = 0;  // into the cases of TriggeredCases
  int summary = 0;        // which of its case's summaries proposed it
  CandidateSkill skill;
  std::vector<Regeneration> regens;  // beside skill.runs
};

// One candidate per skill of every parsed reply, in reply order; `report_summaries` gets one entry per reply (its
// response, its skills' names and a summary reward of 0, which AdmitAndStage raises).
std::vector<Candidate> CandidatesFrom(const std::vector<const SummaryCase*>& cases, size_t per_case,
                                      const std::vector<SummaryReply>& replies, nlohmann::json* report_summaries);

struct VerificationJob {
  size_t cand;       // into the candidates
  std::string task;  // the origin task, or a second task
};

struct VerificationPlan {
  std::vector<VerificationJob> jobs;
  std::map<std::string, Regeneration> baselines;  // second task -> its greedy turn 1 without the candidate
};

// A job on each candidate's origin task, and with opts.verify.require_second_task one on another task of the run
// (chosen from opts.seed + the candidate's index), whose baseline is then needed.
VerificationPlan PlanVerification(const std::vector<Candidate>& cands, const RunInputs& in, const EvolveOptions& opts);

// Runs the baselines, then every job (on its origin task the candidate goes on top of what the winning scheme had;
// elsewhere it stands alone), and appends each job's run and regeneration to its candidate, in job order.
void Verify(const std::vector<const SummaryCase*>& cases, const RunInputs& in, const EvolveOptions& opts,
            const agent::ChatClient& llm, agent::EvalBackend* gym, VerificationPlan* plan,
            std::vector<Candidate>* cands);

// Admits or refuses each candidate, stages the admitted ones (best per task) and raises their summaries' rewards to
// their verify_speedup. Writes the report's "candidates", "second_task_baselines" (when there are any) and "staged".
void AdmitAndStage(const std::vector<Candidate>& cands, const VerificationPlan& plan, size_t per_case,
                   const VerifyOptions& verify, SkillStaging* staging, nlohmann::json* report);

// Flushes the staging area onto the base snapshot and writes it as base_step + 1. Writes the report's "snapshot",
// "step", "skills", "added" and "near_duplicates".
Status WriteNextSnapshot(const EvolveOptions& opts, const LoadedSnapshot& base, int64_t base_step,
                         const SkillStaging& staging, nlohmann::json* report);

}  // namespace kgym::skills::evolve
