#include "skills/evolve_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/extract.h"
#include "agent/run_dir.h"
#include "agent/turn_loop.h"
#include "core/parallel_for.h"
#include "skills/selection.h"
#include "skills/skill_selector.h"

namespace kgym::skills::evolve {
namespace {

namespace fs = std::filesystem;

Status ReadJsonFile(const std::string& path, nlohmann::json* out) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot open " + path);
  *out = nlohmann::json::parse(in, nullptr, false);
  if (out->is_discarded()) return Status::InvalidArgument(path + " is not valid JSON");
  return Status::Ok();
}

// The tasks file of the run: opts.tasks_path, else the one RUN_DIR/config.json names.
Status TasksPath(const EvolveOptions& opts, std::string* path) {
  *path = opts.tasks_path;
  if (!path->empty()) return Status::Ok();
  nlohmann::json config;
  Status s = ReadJsonFile(opts.run_dir + "/config.json", &config);
  if (!s.ok()) return Status::InvalidArgument(s.message() + "; pass --tasks");
  *path = config.value("tasks", "");
  if (path->empty()) return Status::InvalidArgument(opts.run_dir + "/config.json names no tasks; pass --tasks");
  return Status::Ok();
}

Regeneration Regenerate(const agent::Task& task, const nlohmann::json& task_messages, const std::string& injected,
                        const std::string& id_tag, const EvolveOptions& opts, const agent::ChatClient& llm,
                        agent::EvalBackend* gym) {
  Regeneration r;
  const nlohmann::json messages = injected.empty() ? task_messages : InjectSkills(task_messages, injected);
  agent::ChatResponse resp;
  Status st = llm.Complete(ToChatMessages(messages), opts.verify_sampling, &resp);
  if (!st.ok()) {
    r.error = "generation failed: " + st.ToString();
    return r;
  }
  const agent::ExtractedCode ex = agent::ExtractKernelCode(resp.choices.front().content);
  std::string why;
  if (!agent::Preflight(task.reference_code, ex.code, task.entry_point, &why)) {
    r.ok = true;  // a verdict: the regenerated kernel is not even a candidate
    r.error = "preflight: " + why;
    return r;
  }
  EvalRequest req = opts.eval;
  req.task_id = agent::EvalTaskId("evolve-" + id_tag, task.id, 0, 1, ex.code);
  req.reference_code = task.reference_code;
  req.kernel_code = ex.code;
  req.entry_point = task.entry_point;
  r.eval_task_id = req.task_id;
  nlohmann::json result;
  st = gym->Evaluate(req, &result);
  if (!st.ok()) {
    r.error = "evaluation failed: " + st.ToString();
    return r;
  }
  r.ok = true;
  r.correct = result.value("correctness", false) && !result.value("decoy_kernel", false);
  r.speedup = r.correct ? result.value("speedup", 0.0) : 0.0;
  if (!r.correct && result.contains("error_message") && result["error_message"].is_string())
    r.error = result["error_message"].get<std::string>();
  return r;
}

nlohmann::json RunJson(const VerificationRun& run, const VerifyOptions& v, const Regeneration& g) {
  nlohmann::json j = {{"task", run.task_uid},
                      {"correct", run.correct},
                      {"speedup", run.speedup},
                      {"turn1_speedup", run.turn1_speedup},
                      {"passes", VerificationPasses(run, v)},
                      {"eval_task_id", g.eval_task_id}};
  if (!g.error.empty()) j["error"] = g.error;
  return j;
}

}  // namespace

Status LoadRun(const EvolveOptions& opts, RunInputs* in) {
  const std::string marker = opts.run_dir + "/evolve.json";
  if (fs::exists(marker) && !opts.force)
    return Status::InvalidArgument(marker +
                                   " exists: this run already fed the library (its usage counters would "
                                   "count twice); pass --force to evolve from it again");
  std::vector<nlohmann::json> records;
  if (!fs::exists(opts.run_dir + "/trajectories.jsonl"))
    return Status::InvalidArgument(opts.run_dir + " has no trajectories.jsonl (not an agent run directory)");
  Status s = agent::LoadTrajectories(opts.run_dir, &records);
  if (!s.ok()) return s;
  std::string tasks_path;
  if (s = TasksPath(opts, &tasks_path); !s.ok()) return s;
  s = agent::LoadTasks(tasks_path, &in->task_list);
  if (!s.ok())
    return Status::InvalidArgument("tasks of the run (" + tasks_path + "): " + s.message() +
                                   (opts.tasks_path.empty() ? "; pass --tasks" : ""));
  for (const auto& t : in->task_list) in->tasks[t.id] = &t;
  for (const auto& rec : records) {
    Trajectory t = TrajectoryFromRecord(rec);
    if (t.task_uid.empty() || t.turns.empty()) continue;
    if (in->tasks.count(t.task_uid)) in->run_tasks.insert(t.task_uid);
    if (!in->plain_messages.count(t.task_uid)) in->plain_messages[t.task_uid] = t.task_messages;
    in->trajectories.push_back(std::move(t));
  }
  return Status::Ok();
}

Status LoadBase(const EvolveOptions& opts, LoadedSnapshot* snap, int64_t* base_step) {
  Status s = LoadSnapshot(opts.library_dir, opts.step, snap);
  if (!s.ok()) return s;
  *base_step = std::max<int64_t>(snap->step, 0);
  const std::string next = SnapshotPath(opts.library_dir, *base_step + 1);
  if (fs::exists(next))
    return Status::InvalidArgument(next + " exists: evolving step " + std::to_string(*base_step) +
                                   " would replace it; extend the newest snapshot instead");
  return Status::Ok();
}

nlohmann::json CountUsage(const std::vector<Trajectory>& trajectories, const std::vector<SkillRecord>& library,
                          double success_speedup, SkillStaging* staging) {
  std::set<std::string> known;
  for (const auto& sk : library) known.insert(sk.name);
  for (const auto& t : trajectories) {
    std::vector<std::string> names;
    for (const auto& n : t.skill_names)
      if (known.count(n)) names.push_back(n);
    if (!names.empty()) staging->RecordUsage(names, TrajectorySucceeded(t, success_speedup));
  }
  nlohmann::json usage = nlohmann::json::object();
  for (const auto& [name, u] : staging->usage()) usage[name] = {{"uses", u.first}, {"successes", u.second}};
  return usage;
}

std::vector<const SummaryCase*> TriggeredCases(const std::map<std::string, SummaryCase>& cases, const RunInputs& in,
                                               nlohmann::json* report_cases) {
  std::vector<const SummaryCase*> out;
  *report_cases = nlohmann::json::array();
  for (const auto& [uid, c] : cases) {
    if (!in.tasks.count(uid)) continue;  // cannot verify without the task's reference
    out.push_back(&c);
    report_cases->push_back({{"task", uid},
                             {"scheme", c.trajectory->scheme},
                             {"turn1_speedup", c.turn1_speedup},
                             {"best_speedup", c.best_speedup},
                             {"best_turn", c.best_turn + 1},
                             {"had_skills", c.trajectory->injected_skills.has_value()}});
  }
  return out;
}

std::vector<SummaryReply> SampleSummaries(const std::vector<const SummaryCase*>& cases, const EvolveOptions& opts,
                                          const agent::ChatClient& llm) {
  const size_t per_case = static_cast<size_t>(std::max(1, opts.summaries_per_task));
  std::vector<SummaryReply> replies(cases.size() * per_case);
  agent::SamplingParams ssp = opts.summary_sampling;
  if (opts.send_tool_schema) ssp.extra["tools"] = nlohmann::json::array({UpdateSkillLibraryTool(opts.summary)});
  ParallelFor(replies.size(), opts.concurrency, [&](size_t i) {
    SummaryReply& r = replies[i];
    agent::ChatResponse resp;
    agent::SamplingParams sp = ssp;
    if (sp.seed >= 0) sp.seed += static_cast<int>(i);
    Status st = llm.Complete(ToChatMessages(BuildSummaryMessages(*cases[i / per_case], opts.summary)), sp, &resp);
    if (!st.ok()) {
      r.error = st.ToString();
      return;
    }
    r.response = resp.choices.front().content;
    r.parsed = ParseSummaryResponse(r.response, opts.summary);
    if (!r.parsed.call_found) {
      r.response = ToolCallText(resp.choices.front());
      r.parsed = ParseSummaryResponse(r.response, opts.summary);
    }
  });
  return replies;
}

std::vector<Candidate> CandidatesFrom(const std::vector<const SummaryCase*>& cases, size_t per_case,
                                      const std::vector<SummaryReply>& replies, nlohmann::json* report_summaries) {
  std::vector<Candidate> cands;
  *report_summaries = nlohmann::json::array();
  for (size_t i = 0; i < replies.size(); ++i) {
    const size_t ci = i / per_case;
    const SummaryReply& r = replies[i];
    nlohmann::json sj = {{"task", cases[ci]->trajectory->task_uid},
                         {"summary", i % per_case},
                         {"call_found", r.parsed.call_found},
                         {"rejected", r.parsed.rejected}};
    if (!r.error.empty()) sj["error"] = r.error;
    sj["response"] = r.response;
    sj["reward"] = 0.0;  // daVinci's summary reward: verify_speedup of its best admitted skill (AdmitAndStage)
    nlohmann::json names = nlohmann::json::array();
    for (const auto& sk : r.parsed.skills) {
      names.push_back(sk.name);
      Candidate c;
      c.case_index = ci;
      c.summary = static_cast<int>(i % per_case);
      c.skill.skill = sk;
      c.skill.origin_task = cases[ci]->trajectory->task_uid;
      cands.push_back(std::move(c));
    }
    sj["skills"] = names;
    report_summaries->push_back(sj);
  }
  return cands;
}

VerificationPlan PlanVerification(const std::vector<Candidate>& cands, const RunInputs& in, const EvolveOptions& opts) {
  VerificationPlan plan;
  const std::vector<std::string> pool(in.run_tasks.begin(), in.run_tasks.end());
  for (size_t i = 0; i < cands.size(); ++i) {
    plan.jobs.push_back({i, cands[i].skill.origin_task});
    if (!opts.verify.require_second_task) continue;
    if (auto other = ChooseSecondTask(cands[i].skill.origin_task, pool, opts.seed + i)) {
      plan.jobs.push_back({i, *other});
      plan.baselines[*other];
    }
  }
  return plan;
}

void Verify(const std::vector<const SummaryCase*>& cases, const RunInputs& in, const EvolveOptions& opts,
            const agent::ChatClient& llm, agent::EvalBackend* gym, VerificationPlan* plan,
            std::vector<Candidate>* cands) {
  std::vector<std::string> baseline_tasks;
  for (auto& [task, _] : plan->baselines) baseline_tasks.push_back(task);
  ParallelFor(baseline_tasks.size(), opts.concurrency, [&](size_t i) {
    const std::string& task = baseline_tasks[i];
    plan->baselines.at(task) = Regenerate(*in.tasks.at(task), in.plain_messages.at(task), "", "base", opts, llm, gym);
  });
  std::vector<Regeneration> results(plan->jobs.size());
  ParallelFor(plan->jobs.size(), opts.concurrency, [&](size_t i) {
    const VerificationJob& j = plan->jobs[i];
    const Candidate& c = (*cands)[j.cand];
    const bool origin = j.task == c.skill.origin_task;
    const std::optional<std::string> base_inj =
        origin ? cases[c.case_index]->trajectory->injected_skills : std::nullopt;
    results[i] =
        Regenerate(*in.tasks.at(j.task), in.plain_messages.at(j.task), VerificationInjection(base_inj, c.skill.skill),
                   "c" + std::to_string(j.cand), opts, llm, gym);
  });
  for (size_t i = 0; i < plan->jobs.size(); ++i) {
    const VerificationJob& j = plan->jobs[i];
    Candidate& c = (*cands)[j.cand];
    VerificationRun run;
    run.task_uid = j.task;
    run.correct = results[i].correct;
    run.speedup = results[i].speedup;
    run.turn1_speedup =
        j.task == c.skill.origin_task ? cases[c.case_index]->turn1_speedup : plan->baselines.at(j.task).speedup;
    c.skill.runs.push_back(run);
    c.regens.push_back(results[i]);
  }
}

void AdmitAndStage(const std::vector<Candidate>& cands, const VerificationPlan& plan, size_t per_case,
                   const VerifyOptions& verify, SkillStaging* staging, nlohmann::json* report) {
  nlohmann::json& rep = *report;
  nlohmann::json cands_json = nlohmann::json::array();
  for (const auto& c : cands) {
    const Admission a = AdmitCandidate(c.skill, verify);
    nlohmann::json runs = nlohmann::json::array();
    for (size_t r = 0; r < c.skill.runs.size(); ++r) runs.push_back(RunJson(c.skill.runs[r], verify, c.regens[r]));
    cands_json.push_back({{"task", c.skill.origin_task},
                          {"summary", c.summary},
                          {"name", c.skill.skill.name},
                          {"runs", runs},
                          {"admitted", a.admitted},
                          {"verify_speedup", a.verify_speedup},
                          {"reason", a.reason}});
    if (!a.admitted) continue;
    staging->Offer(c.skill.origin_task, c.skill.skill, a.verify_speedup);
    auto& r = rep["summaries"][c.case_index * per_case + static_cast<size_t>(c.summary)]["reward"];
    r = std::max(r.get<double>(), a.verify_speedup);
  }
  rep["candidates"] = cands_json;
  nlohmann::json baselines_json = nlohmann::json::object();
  for (const auto& [task, g] : plan.baselines)
    baselines_json[task] = {{"correct", g.correct}, {"speedup", g.speedup}, {"error", g.error}};
  if (!plan.baselines.empty()) rep["second_task_baselines"] = baselines_json;
  nlohmann::json staged = nlohmann::json::array();
  for (const auto& sk : staging->Staged())
    staged.push_back({{"name", sk.name}, {"verify_speedup", *sk.verify_speedup}});
  rep["staged"] = staged;
}

Status WriteNextSnapshot(const EvolveOptions& opts, const LoadedSnapshot& base, int64_t base_step,
                         const SkillStaging& staging, nlohmann::json* report) {
  const FlushResult fr = FlushStaged(base.skills, staging, opts.flush);
  Status s = WriteSnapshot(opts.library_dir, base_step + 1, fr.skills);
  if (!s.ok()) return s;
  nlohmann::json& rep = *report;
  rep["snapshot"] = SnapshotPath(opts.library_dir, base_step + 1);
  rep["step"] = base_step + 1;
  rep["skills"] = fr.skills.size();
  rep["added"] = fr.added;
  rep["near_duplicates"] = fr.duplicates;
  return Status::Ok();
}

}  // namespace kgym::skills::evolve
