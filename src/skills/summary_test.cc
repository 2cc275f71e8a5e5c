#include "skills/summary.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

Trajectory Traj(const std::string& task, int scheme, std::vector<std::pair<bool, double>> turns) {
  Trajectory t;
  t.task_uid = task;
  t.scheme = scheme;
  t.task_messages = {{{"role", "user"}, {"content", "task " + task}}};
  for (size_t i = 0; i < turns.size(); ++i)
    t.turns.push_back({turns[i].first, turns[i].second, "code" + std::to_string(i)});
  return t;
}

TEST(SummaryTrigger, Rule) {
  TriggerOptions o;
  EXPECT_TRUE(Qualifies(Traj("a", 0, {{true, 1.0}, {true, 1.2}}), o));    // exactly 1.2x and 1.2 abs
  EXPECT_FALSE(Qualifies(Traj("a", 0, {{true, 1.0}, {true, 1.19}}), o));  // below 1.2 absolute
  EXPECT_FALSE(Qualifies(Traj("a", 0, {{true, 1.5}, {true, 1.7}}), o));   // 1.13x over turn 1
  EXPECT_FALSE(Qualifies(Traj("a", 0, {{false, 0.9}, {true, 3.0}}), o));  // turn 1 incorrect
  EXPECT_FALSE(Qualifies(Traj("a", 0, {{true, 1.0}, {false, 5.0}}), o));  // incorrect turns count as 0
  SummaryCase c;
  ASSERT_TRUE(Qualifies(Traj("a", 0, {{true, 0.5}, {true, 2.0}, {true, 1.5}}), o, &c));
  EXPECT_EQ(c.best_turn, 1u);
  EXPECT_EQ(c.turn1_speedup, 0.5);
  EXPECT_EQ(c.best_speedup, 2.0);
  o.require_turn1_correct = false;
  EXPECT_TRUE(Qualifies(Traj("a", 0, {{false, 0.9}, {true, 3.0}}), o));
}

TEST(SummaryTrigger, BestTrajectoryPerTask) {
  std::vector<Trajectory> ts = {Traj("a", 0, {{true, 1.0}, {true, 1.5}}), Traj("a", 3, {{true, 1.0}, {true, 2.5}}),
                                Traj("a", 1, {{true, 1.0}, {true, 2.5}}), Traj("b", 0, {{true, 1.0}, {true, 1.1}}),
                                Traj("c", 2, {{true, 2.0}, {true, 4.0}})};
  auto cases = SelectSummaryCases(ts);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases["a"].trajectory, &ts[1]);  // null scheme (3) may win; the first of equal bests is kept
  EXPECT_EQ(cases["c"].best_speedup, 4.0);
}

TEST(Summary, PromptCarriesTurnsAndInjectedSkills) {
  auto t = Traj("a", 0, {{true, 1.0}, {true, 1.25}, {true, 2.5}});
  SummaryCase c;
  ASSERT_TRUE(Qualifies(t, {}, &c));
  auto m = BuildSummaryMessages(c);
  const std::string user = m[1]["content"];
  EXPECT_NE(user.find("[USER]\ntask a"), std::string::npos);
  EXPECT_NE(user.find("(no skills were injected"), std::string::npos);
  EXPECT_NE(user.find("## Turn 1 Result (speedup: 1.00x)\n\n```python\ncode0\n```"), std::string::npos);
  EXPECT_NE(user.find("## Best Turn Result (speedup: 2.50x)\n\n```python\ncode2\n```"), std::string::npos);
  t.injected_skills = "INJECTED TEXT";
  EXPECT_NE(std::string(BuildSummaryMessages(c)[1]["content"]).find("INJECTED TEXT"), std::string::npos);
}

nlohmann::json Item(const std::string& name, const std::string& content) {
  return {{"name", name}, {"description", "d"}, {"scope", "general"}, {"tags", {"t"}}, {"content", content}};
}

std::string Call(const nlohmann::json& skills) {
  return "<tool_call>" +
         nlohmann::json{{"name", "update_skill_library"}, {"arguments", {{"think", "t"}, {"new_skills", skills}}}}
             .dump() +
         "</tool_call>";
}

TEST(Summary, LazySkillFilter) {
  for (const char* lazy :
       {"Fall back to PyTorch for the reduction.", "Just use torch.compile here.", "Use cuBLAS instead.",
        "Avoid writing a custom kernel when small.", "Don't write Triton for this.",
        "Skip the computation of masked rows.", "Eliminate the kernel entirely.", "drop the kernel"}) {
    SkillRecord s;
    s.name = "x";
    s.description = "d";
    s.content = std::string("## Key Idea\n") + lazy;
    EXPECT_TRUE(IsLazySkill(s)) << lazy;
  }
  SkillRecord ok;
  ok.name = "online_softmax";
  ok.description = "one pass softmax with running max";
  ok.content = "## Key Idea\nKeep a running max and rescale the sum; fuse the exp into the load loop.";
  EXPECT_FALSE(IsLazySkill(ok));
}

TEST(Summary, ParseFiltersAndCaps) {
  auto parsed = ParseSummaryResponse(
      Call({Item("good", "## Key Idea\nvectorize"), Item("lazy", "fall back to torch"), Item("third", "c")}));
  ASSERT_TRUE(parsed.call_found);
  ASSERT_EQ(parsed.skills.size(), 1u);  // third is beyond M = 2, lazy is filtered
  EXPECT_EQ(parsed.skills[0].name, "good");
  EXPECT_EQ(parsed.rejected.size(), 2u);
  auto missing = Item("m", "c");
  missing.erase("description");
  auto bad_scope = Item("s", "c");
  bad_scope["scope"] = "task-specific/matmul";
  parsed = ParseSummaryResponse(Call({missing, bad_scope}));
  ASSERT_EQ(parsed.skills.size(), 1u);
  EXPECT_EQ(parsed.skills[0].scope, "task_specific/matmul");
  EXPECT_NE(parsed.rejected[0].find("'description'"), std::string::npos);
  EXPECT_FALSE(ParseSummaryResponse("no call").call_found);
  EXPECT_TRUE(ParseSummaryResponse(Call("not a list")).skills.empty());
}

}  // namespace
}  // namespace kgym::skills
