#include "skills/evolve.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "skills/evolve_steps.h"

namespace kgym::skills {

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
  using namespace evolve;
  nlohmann::json& rep = *report;
  rep = nlohmann::json::object();
  RunInputs in;
  if (Status s = LoadRun(opts, &in); !s.ok()) return s;
  LoadedSnapshot base;
  int64_t base_step = 0;
  if (Status s = LoadBase(opts, &base, &base_step); !s.ok()) return s;
  rep["run_dir"] = opts.run_dir;
  rep["library"] = opts.library_dir;
  rep["base_step"] = base.step;
  rep["base_skills"] = base.skills.size();
  rep["trajectories"] = in.trajectories.size();

  SkillStaging staging;
  rep["usage"] = CountUsage(in.trajectories, base.skills, opts.usage_success_speedup, &staging);
  const std::map<std::string, SummaryCase> all_cases = SelectSummaryCases(in.trajectories, opts.trigger);
  const std::vector<const SummaryCase*> cases = TriggeredCases(all_cases, in, &rep["cases"]);
  const size_t per_case = static_cast<size_t>(std::max(1, opts.summaries_per_task));
  std::vector<Candidate> cands = CandidatesFrom(cases, per_case, SampleSummaries(cases, opts, llm), &rep["summaries"]);
  VerificationPlan plan = PlanVerification(cands, in, opts);
  Verify(cases, in, opts, llm, gym, &plan, &cands);
  AdmitAndStage(cands, plan, per_case, opts.verify, &staging, &rep);
  if (Status s = WriteNextSnapshot(opts, base, base_step, staging, &rep); !s.ok()) return s;

  const std::string marker = opts.run_dir + "/evolve.json";
  std::ofstream out(marker);
  out << rep.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!out) return Status::IOError("cannot write " + marker);
  return Status::Ok();
}

}  // namespace kgym::skills
