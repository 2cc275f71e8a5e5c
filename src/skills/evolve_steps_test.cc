#include "skills/evolve_steps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kgym::skills::evolve {
namespace {

SkillRecord Skill(const std::string& name) {
  SkillRecord s;
  s.name = name;
  s.description = "about " + name;
  s.content = "body of " + name;
  return s;
}

Trajectory Traj(const std::string& task, std::vector<double> speedups, std::vector<std::string> skills = {}) {
  Trajectory t;
  t.task_uid = task;
  for (double s : speedups) t.turns.push_back({s > 0, s, "code"});
  t.skill_names = std::move(skills);
  if (!t.skill_names.empty()) t.injected_skills = "injected";
  return t;
}

RunInputs Inputs(const std::vector<std::string>& task_ids) {
  RunInputs in;
  for (const auto& id : task_ids) {
    agent::Task t;
    t.id = id;
    in.task_list.push_back(t);
  }
  for (const auto& t : in.task_list) {
    in.tasks[t.id] = &t;
    in.run_tasks.insert(t.id);
  }
  return in;
}

TEST(EvolveSteps, CountUsageCountsOnlyTheLibrarysSkills) {
  const std::vector<Trajectory> trajs = {Traj("a", {1.0, 1.5}, {"tiling", "unknown"}), Traj("b", {0.0}, {"tiling"}),
                                         Traj("c", {2.0})};
  SkillStaging staging;
  const nlohmann::json usage = CountUsage(trajs, {Skill("tiling"), Skill("fusion")}, 1.0, &staging);
  EXPECT_EQ(usage, nlohmann::json({{"tiling", {{"uses", 2}, {"successes", 1}}}}));
}

TEST(EvolveSteps, TriggeredCasesKeepOnlyKnownTasks) {
  const std::vector<Trajectory> trajs = {Traj("a", {1.0, 2.0}), Traj("gone", {1.0, 3.0}), Traj("b", {1.0, 1.1})};
  const RunInputs in = Inputs({"a", "b"});
  nlohmann::json report;
  const auto all = SelectSummaryCases(trajs, {});
  ASSERT_EQ(all.size(), 2u);  // b does not qualify (1.1x); "gone" does but has no task
  const auto cases = TriggeredCases(all, in, &report);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]->trajectory->task_uid, "a");
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0]["task"], "a");
  EXPECT_EQ(report[0]["best_turn"], 2);
  EXPECT_EQ(report[0]["had_skills"], false);
}

TEST(EvolveSteps, CandidatesFromRepliesInOrderWithZeroRewards) {
  const std::vector<Trajectory> trajs = {Traj("a", {1.0, 2.0})};
  const auto all = SelectSummaryCases(trajs, {});
  const std::vector<const SummaryCase*> cases = {&all.at("a")};
  std::vector<SummaryReply> replies(2);
  replies[0].parsed.call_found = true;
  replies[0].parsed.skills = {Skill("x"), Skill("y")};
  replies[0].response = "text";
  replies[1].error = "unavailable";
  nlohmann::json report;
  const auto cands = CandidatesFrom(cases, 2, replies, &report);
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[1].skill.skill.name, "y");
  EXPECT_EQ(cands[1].summary, 0);
  EXPECT_EQ(cands[1].skill.origin_task, "a");
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0]["skills"], nlohmann::json({"x", "y"}));
  EXPECT_EQ(report[0]["reward"], 0.0);
  EXPECT_EQ(report[1]["error"], "unavailable");
  EXPECT_EQ(report[1]["summary"], 1);
}

TEST(EvolveSteps, PlanVerificationAddsSecondTasksAndTheirBaselines) {
  std::vector<Candidate> cands(2);
  cands[0].skill.origin_task = "a";
  cands[1].skill.origin_task = "b";
  const RunInputs in = Inputs({"a", "b"});
  EvolveOptions opts;
  VerificationPlan plain = PlanVerification(cands, in, opts);
  ASSERT_EQ(plain.jobs.size(), 2u);
  EXPECT_TRUE(plain.baselines.empty());
  opts.verify.require_second_task = true;
  VerificationPlan both = PlanVerification(cands, in, opts);
  ASSERT_EQ(both.jobs.size(), 4u);
  EXPECT_EQ(both.jobs[1].task, "b");  // a's only other task
  EXPECT_EQ(both.jobs[3].task, "a");
  EXPECT_EQ(both.baselines.size(), 2u);
}

TEST(EvolveSteps, AdmitAndStageRaisesTheSummaryRewardOfAnAdmittedSkill) {
  std::vector<Candidate> cands(2);
  for (int i = 0; i < 2; ++i) {
    cands[i].summary = i;
    cands[i].skill.skill = Skill(i ? "slow" : "fast");
    cands[i].skill.origin_task = "a";
    cands[i].skill.runs = {{"a", true, i ? 1.1 : 2.5, 1.0}};
    cands[i].regens.resize(1);
  }
  nlohmann::json report = {{"summaries", {{{"reward", 0.0}}, {{"reward", 0.0}}}}};
  SkillStaging staging;
  AdmitAndStage(cands, {}, 2, {}, &staging, &report);
  EXPECT_EQ(report["summaries"][0]["reward"], 2.5);
  EXPECT_EQ(report["summaries"][1]["reward"], 0.0);
  EXPECT_EQ(report["candidates"][1]["admitted"], false);
  ASSERT_EQ(report["staged"].size(), 1u);
  EXPECT_EQ(report["staged"][0]["name"], "fast");
  EXPECT_FALSE(report.contains("second_task_baselines"));
}

TEST(EvolveSteps, LoadRunRefusesARunThatAlreadyFedTheLibrary) {
  const std::string dir = ::testing::TempDir() + "/evolve_steps_run";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/evolve.json") << "{}\n";
  EvolveOptions opts;
  opts.run_dir = dir;
  RunInputs in;
  Status s = LoadRun(opts, &in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--force"), std::string::npos);
  opts.force = true;
  s = LoadRun(opts, &in);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no trajectories.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace kgym::skills::evolve
