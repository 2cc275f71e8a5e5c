#include "skills/evolve.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "agent/extract.h"
#include "agent/run_dir.h"
#include "agent/task.h"
#include "agent/turn_loop.h"
#include "core/parallel_for.h"
#include "skills/selection.h"
#include "skills/skill_selector.h"
#include "skills/snapshot_store.h"

namespace kgym::skills {
namespace {

namespace fs = std::filesystem;

Status ReadJsonFile(const std::string& path, nlohmann::json* out) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot open " + path);
  *out = nlohmann::json::parse(in, nullptr, false);
  if (out->is_discarded()) return Status::InvalidArgument(path + " is not valid JSON");
  return Status::Ok();
}

// One greedy turn-1 generation of a task with `injected` skill text (may be empty), evaluated on the gym.
struct Regeneration {
  bool ok = false;  // a verdict was reached
  bool correct = false;
  double speedup = 0;
  std::string error;
  std::string eval_task_id;
};

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

Trajectory TrajectoryFromRecord(const nlohmann::json& rec) {
  Trajectory t;
  t.task_uid = rec.value("task_id", "");
  const nlohmann::json note = rec.value("first_turn", nlohmann::json::object());
  t.scheme = note.value("scheme", 0);
  std::string plain;
  if (note.contains("plain_prompt") && note["plain_prompt"].is_string()) {
    plain = note["plain_prompt"].get<std::string>();
  } else if (rec.contains("messages") && rec["messages"].is_array() && !rec["messages"].empty()) {
    plain = rec["messages"][0].value("content", "");
  }
  t.task_messages = nlohmann::json::array({{{"role", "user"}, {"content", plain}}});
  if (note.contains("injected") && note["injected"].is_string() && !note["injected"].get<std::string>().empty())
    t.injected_skills = note["injected"].get<std::string>();
  if (note.contains("skills") && note["skills"].is_array())
    for (const auto& s : note["skills"])
      if (s.is_string()) t.skill_names.push_back(s.get<std::string>());
  if (rec.contains("turns") && rec["turns"].is_array())
    for (const auto& turn : rec["turns"]) {
      if (turn.value("abnormal", false) || !turn.contains("result")) continue;
      const auto& r = turn["result"];
      TurnOutcome o;
      o.correct = r.value("correctness", false) && !r.value("decoy_kernel", false);
      o.speedup = r.value("speedup", 0.0);
      o.code = turn.value("code", "");
      t.turns.push_back(std::move(o));
    }
  return t;
}

Status RunEvolve(const EvolveOptions& opts, const agent::ChatClient& llm, agent::EvalBackend* gym,
                 nlohmann::json* report) {
  nlohmann::json& rep = *report;
  rep = nlohmann::json::object();
  const std::string marker = opts.run_dir + "/evolve.json";
  if (fs::exists(marker) && !opts.force)
    return Status::InvalidArgument(marker +
                                   " exists: this run already fed the library (its usage counters would "
                                   "count twice); pass --force to evolve from it again");

  // 1. Trajectories and tasks.
  std::vector<nlohmann::json> records;
  if (!fs::exists(opts.run_dir + "/trajectories.jsonl"))
    return Status::InvalidArgument(opts.run_dir + " has no trajectories.jsonl (not an agent run directory)");
  Status s = agent::LoadTrajectories(opts.run_dir, &records);
  if (!s.ok()) return s;
  std::string tasks_path = opts.tasks_path;
  if (tasks_path.empty()) {
    nlohmann::json config;
    s = ReadJsonFile(opts.run_dir + "/config.json", &config);
    if (!s.ok()) return Status::InvalidArgument(s.message() + "; pass --tasks");
    tasks_path = config.value("tasks", "");
    if (tasks_path.empty()) return Status::InvalidArgument(opts.run_dir + "/config.json names no tasks; pass --tasks");
  }
  std::vector<agent::Task> task_list;
  s = agent::LoadTasks(tasks_path, &task_list);
  if (!s.ok())
    return Status::InvalidArgument("tasks of the run (" + tasks_path + "): " + s.message() +
                                   (opts.tasks_path.empty() ? "; pass --tasks" : ""));
  std::map<std::string, const agent::Task*> tasks;
  for (const auto& t : task_list) tasks[t.id] = &t;

  std::vector<Trajectory> trajs;
  std::set<std::string> run_tasks;
  for (const auto& rec : records) {
    Trajectory t = TrajectoryFromRecord(rec);
    if (t.task_uid.empty() || t.turns.empty()) continue;
    if (tasks.count(t.task_uid)) run_tasks.insert(t.task_uid);
    trajs.push_back(std::move(t));
  }

  LoadedSnapshot snap;
  s = LoadSnapshot(opts.library_dir, opts.step, &snap);
  if (!s.ok()) return s;
  const int64_t base_step = std::max<int64_t>(snap.step, 0);
  if (fs::exists(SnapshotPath(opts.library_dir, base_step + 1)))
    return Status::InvalidArgument(SnapshotPath(opts.library_dir, base_step + 1) + " exists: evolving step " +
                                   std::to_string(base_step) + " would replace it; extend the newest snapshot instead");
  rep["run_dir"] = opts.run_dir;
  rep["library"] = opts.library_dir;
  rep["base_step"] = snap.step;
  rep["base_skills"] = snap.skills.size();
  rep["trajectories"] = trajs.size();

  // 2. Usage counters.
  SkillStaging staging;
  std::set<std::string> known;
  for (const auto& sk : snap.skills) known.insert(sk.name);
  for (const auto& t : trajs) {
    std::vector<std::string> names;
    for (const auto& n : t.skill_names)
      if (known.count(n)) names.push_back(n);
    if (!names.empty()) staging.RecordUsage(names, TrajectorySucceeded(t, opts.usage_success_speedup));
  }
  nlohmann::json usage = nlohmann::json::object();
  for (const auto& [name, u] : staging.usage()) usage[name] = {{"uses", u.first}, {"successes", u.second}};
  rep["usage"] = usage;

  // 3. Trigger.
  const std::map<std::string, SummaryCase> cases = SelectSummaryCases(trajs, opts.trigger);
  std::vector<const SummaryCase*> case_list;
  nlohmann::json cases_json = nlohmann::json::array();
  for (const auto& [uid, c] : cases) {
    if (!tasks.count(uid)) continue;  // cannot verify without the task's reference
    case_list.push_back(&c);
    cases_json.push_back({{"task", uid},
                          {"scheme", c.trajectory->scheme},
                          {"turn1_speedup", c.turn1_speedup},
                          {"best_speedup", c.best_speedup},
                          {"best_turn", c.best_turn + 1},
                          {"had_skills", c.trajectory->injected_skills.has_value()}});
  }
  rep["cases"] = cases_json;

  // 4. Summaries.
  struct Candidate {
    size_t case_index;
    int summary;
    CandidateSkill skill;
    std::vector<Regeneration> regens;
  };
  const size_t s_per = static_cast<size_t>(std::max(1, opts.summaries_per_task));
  std::vector<ParsedSummary> parsed(case_list.size() * s_per);
  std::vector<std::string> summary_errors(parsed.size()), summary_responses(parsed.size());
  agent::SamplingParams ssp = opts.summary_sampling;
  if (opts.send_tool_schema) ssp.extra["tools"] = nlohmann::json::array({UpdateSkillLibraryTool(opts.summary)});
  ParallelFor(parsed.size(), opts.concurrency, [&](size_t i) {
    const SummaryCase& c = *case_list[i / s_per];
    agent::ChatResponse resp;
    agent::SamplingParams sp = ssp;
    if (sp.seed >= 0) sp.seed += static_cast<int>(i);
    Status st = llm.Complete(ToChatMessages(BuildSummaryMessages(c, opts.summary)), sp, &resp);
    if (!st.ok()) {
      summary_errors[i] = st.ToString();
      return;
    }
    summary_responses[i] = resp.choices.front().content;
    parsed[i] = ParseSummaryResponse(resp.choices.front().content, opts.summary);
    if (!parsed[i].call_found) {
      summary_responses[i] = ToolCallText(resp.choices.front());
      parsed[i] = ParseSummaryResponse(summary_responses[i], opts.summary);
    }
  });
  std::vector<Candidate> cands;
  nlohmann::json summaries_json = nlohmann::json::array();
  for (size_t i = 0; i < parsed.size(); ++i) {
    const size_t ci = i / s_per;
    nlohmann::json sj = {{"task", case_list[ci]->trajectory->task_uid},
                         {"summary", i % s_per},
                         {"call_found", parsed[i].call_found},
                         {"rejected", parsed[i].rejected}};
    if (!summary_errors[i].empty()) sj["error"] = summary_errors[i];
    sj["response"] = summary_responses[i];
    sj["reward"] = 0.0;  // daVinci's summary reward: verify_speedup of its best admitted skill (set below)
    nlohmann::json names = nlohmann::json::array();
    for (auto& sk : parsed[i].skills) {
      names.push_back(sk.name);
      Candidate c;
      c.case_index = ci;
      c.summary = static_cast<int>(i % s_per);
      c.skill.skill = sk;
      c.skill.origin_task = case_list[ci]->trajectory->task_uid;
      cands.push_back(std::move(c));
    }
    sj["skills"] = names;
    summaries_json.push_back(sj);
  }
  rep["summaries"] = summaries_json;

  // 5. Verification: jobs = (candidate, task) pairs; second-task baselines are computed once per task first.
  struct Job {
    size_t cand;
    std::string task;
  };
  std::vector<Job> jobs;
  std::map<std::string, Regeneration> baselines;  // second task -> greedy turn 1 without the candidate
  for (size_t i = 0; i < cands.size(); ++i) {
    jobs.push_back({i, cands[i].skill.origin_task});
    if (opts.verify.require_second_task) {
      std::vector<std::string> pool(run_tasks.begin(), run_tasks.end());
      auto other = ChooseSecondTask(cands[i].skill.origin_task, pool, opts.seed + i);
      if (other) {
        jobs.push_back({i, *other});
        baselines[*other];
      }
    }
  }
  std::map<std::string, nlohmann::json> plain_messages;  // task -> its un-injected prompt (from any trajectory)
  for (const auto& t : trajs)
    if (!plain_messages.count(t.task_uid)) plain_messages[t.task_uid] = t.task_messages;
  std::vector<std::string> baseline_tasks;
  for (auto& [task, _] : baselines) baseline_tasks.push_back(task);
  ParallelFor(baseline_tasks.size(), opts.concurrency, [&](size_t i) {
    const std::string& task = baseline_tasks[i];
    baselines.at(task) = Regenerate(*tasks.at(task), plain_messages.at(task), "", "base", opts, llm, gym);
  });
  std::vector<Regeneration> job_results(jobs.size());
  ParallelFor(jobs.size(), opts.concurrency, [&](size_t i) {
    const Job& j = jobs[i];
    const Candidate& c = cands[j.cand];
    const bool origin = j.task == c.skill.origin_task;
    // On the origin task the candidate goes on top of what the winning scheme had; elsewhere it stands alone.
    const std::optional<std::string> base_inj =
        origin ? case_list[c.case_index]->trajectory->injected_skills : std::nullopt;
    job_results[i] =
        Regenerate(*tasks.at(j.task), plain_messages.at(j.task), VerificationInjection(base_inj, c.skill.skill),
                   "c" + std::to_string(j.cand), opts, llm, gym);
  });
  for (size_t i = 0; i < jobs.size(); ++i) {
    Candidate& c = cands[jobs[i].cand];
    const Regeneration& g = job_results[i];
    VerificationRun run;
    run.task_uid = jobs[i].task;
    run.correct = g.correct;
    run.speedup = g.speedup;
    run.turn1_speedup = jobs[i].task == c.skill.origin_task ? case_list[c.case_index]->turn1_speedup
                                                            : baselines.at(jobs[i].task).speedup;
    c.skill.runs.push_back(run);
    c.regens.push_back(g);
  }

  // 6. Admission, staging, flush.
  nlohmann::json cands_json = nlohmann::json::array();
  for (const auto& c : cands) {
    const Admission a = AdmitCandidate(c.skill, opts.verify);
    nlohmann::json runs = nlohmann::json::array();
    for (size_t r = 0; r < c.skill.runs.size(); ++r) runs.push_back(RunJson(c.skill.runs[r], opts.verify, c.regens[r]));
    cands_json.push_back({{"task", c.skill.origin_task},
                          {"summary", c.summary},
                          {"name", c.skill.skill.name},
                          {"runs", runs},
                          {"admitted", a.admitted},
                          {"verify_speedup", a.verify_speedup},
                          {"reason", a.reason}});
    if (a.admitted) {
      staging.Offer(c.skill.origin_task, c.skill.skill, a.verify_speedup);
      auto& r = rep["summaries"][c.case_index * s_per + static_cast<size_t>(c.summary)]["reward"];
      r = std::max(r.get<double>(), a.verify_speedup);
    }
  }
  rep["candidates"] = cands_json;
  nlohmann::json baselines_json = nlohmann::json::object();
  for (const auto& [task, g] : baselines)
    baselines_json[task] = {{"correct", g.correct}, {"speedup", g.speedup}, {"error", g.error}};
  if (!baselines.empty()) rep["second_task_baselines"] = baselines_json;

  nlohmann::json staged = nlohmann::json::array();
  for (const auto& sk : staging.Staged()) staged.push_back({{"name", sk.name}, {"verify_speedup", *sk.verify_speedup}});
  rep["staged"] = staged;
  const FlushResult fr = FlushStaged(snap.skills, staging, opts.flush);
  s = WriteSnapshot(opts.library_dir, base_step + 1, fr.skills);
  if (!s.ok()) return s;
  rep["snapshot"] = SnapshotPath(opts.library_dir, base_step + 1);
  rep["step"] = base_step + 1;
  rep["skills"] = fr.skills.size();
  rep["added"] = fr.added;
  rep["near_duplicates"] = fr.duplicates;

  std::ofstream out(marker);
  out << rep.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out) return Status::IOError("cannot write " + marker);
  return Status::Ok();
}

}  // namespace kgym::skills
