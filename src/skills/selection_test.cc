#include "skills/selection.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

SkillRecord Skill(const std::string& name, const std::string& text) {
  SkillRecord s;
  s.name = name;
  s.description = text;
  s.content = "## Key Idea\n" + text;
  return s;
}

SkillLibrary Library(int n) {
  std::vector<SkillRecord> v;
  const char* topics[] = {"softmax online rescale", "matmul tiling shared", "layernorm welford", "conv im2col"};
  for (int i = 0; i < n; ++i) v.push_back(Skill("skill_" + std::to_string(i), topics[i % 4]));
  return SkillLibrary(v);
}

const char kPrompt[] =
    "You write custom Triton kernels.\n\nclass Model(nn.Module): softmax over rows\n\n"
    "Optimize the architecture named Model with custom Triton operators! Name your optimized output "
    "architecture ModelNew.\n\nExample: Optimize the architecture named Model again.";

TEST(Selection, TaskQueryIsFirstUserMessageTruncated) {
  nlohmann::json m = {{{"role", "system"}, {"content", "sys"}},
                      {{"role", "user"}, {"content", "abcdef"}},
                      {{"role", "user"}, {"content", "later"}}};
  EXPECT_EQ(TaskQuery(m), "abcdef");
  EXPECT_EQ(TaskQuery(m, 3), "abc");
  EXPECT_EQ(TaskQuery(nlohmann::json::array()), "");
}

TEST(Selection, CandidatesFromBm25ElseFallbackSample) {
  auto lib = Library(40);
  auto c = SelectionCandidates(lib, "softmax rescale", 0);
  ASSERT_EQ(c.size(), 10u);  // the 10 softmax skills only: the rest score 0
  for (auto* s : c) EXPECT_EQ(s->description, "softmax online rescale");
  auto f0 = SelectionCandidates(lib, "unrelated words", 0);
  auto f1 = SelectionCandidates(lib, "unrelated words", 1);
  ASSERT_EQ(f0.size(), 30u);
  EXPECT_TRUE(std::is_sorted(f0.begin(), f0.end(), [](auto* a, auto* b) { return a->name < b->name; }));
  EXPECT_EQ(f0, SelectionCandidates(lib, "unrelated words", 0));  // deterministic per scheme
  EXPECT_NE(f0, f1);
  auto small = Library(2);  // idf <= 0 everywhere: the whole library is shown
  EXPECT_EQ(SelectionCandidates(small, "softmax", 0).size(), 2u);
}

TEST(Selection, PromptListsCandidatesAndTool) {
  auto lib = Library(3);
  auto msgs = BuildSelectionMessages("TASK TEXT", {&lib.skills()[1]});
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["role"], "system");
  const std::string user = msgs[1]["content"];
  EXPECT_EQ(user.find("## Task\n\nTASK TEXT"), 0u);
  EXPECT_NE(user.find(" 1. **skill_1**  [scope=general]\n    matmul tiling shared"), std::string::npos);
  EXPECT_EQ(SelectSkillsTool()["function"]["parameters"]["properties"]["selected_skills"]["maxItems"], 3);
}

TEST(Selection, ParseKeepsOnlyLibraryNamesOnce) {
  auto lib = Library(3);
  const std::string text =
      "<tool_call>{\"name\": \"select_skills\", \"arguments\": {\"think\": \"t\", \"selected_skills\": ["
      "{\"name\": \"skill_2\", \"reason\": \"r\"}, {\"name\": \"made_up\", \"reason\": \"r\"}, "
      "{\"name\": \"skill_0\"}, {\"name\": \"skill_2\"}, {\"reason\": \"no name\"}]}}</tool_call>";
  EXPECT_EQ(ParseSelection(text, lib), (std::vector<std::string>{"skill_2", "skill_0"}));
  EXPECT_TRUE(ParseSelection("I pick skill_0", lib).empty());
  EXPECT_TRUE(ParseSelection("<tool_call>{\"name\": \"select_skills\", \"arguments\": {\"selected_skills\": 3}}"
                             "</tool_call>",
                             lib)
                  .empty());
}

TEST(Selection, ParseSkipsMalformedItems) {
  const SkillLibrary lib = Library(3);
  // Items without a string name are ignored; a bare string item is read as a name; names must match exactly.
  const std::string text =
      "<tool_call>{\"name\": \"select_skills\", \"arguments\": {\"selected_skills\": [{\"reason\": \"no name\"}, "
      "{\"name\": 5}, \"skill_0\", {\"name\": \"skill_1\"}, {\"name\": \" skill_2\"}]}}</tool_call>";
  EXPECT_EQ(ParseSelection(text, lib), (std::vector<std::string>{"skill_0", "skill_1"}));
  EXPECT_TRUE(ParseSelection("<tool_call><function=select_skills><parameter=selected_skills>[{'name': 'skill_0',"
                             "</parameter></function></tool_call>",
                             lib)
                  .empty());
  EXPECT_TRUE(ParseSelection("<tool_call>{\"name\": \"update_skill_library\", \"arguments\": {\"selected_skills\": "
                             "[{\"name\": \"skill_0\"}]}}</tool_call>",
                             lib)
                  .empty());  // only a select_skills call counts
}

TEST(Selection, InjectionGoesBeforeLastSentinel) {
  nlohmann::json m = {{{"role", "user"}, {"content", kPrompt}}};
  auto out = InjectSkills(m, "SKILLS");
  const std::string c = out[0]["content"];
  const size_t block = c.find("## [Skill Library]");
  const size_t last = c.rfind(kInjectionSentinel);
  ASSERT_NE(block, std::string::npos);
  EXPECT_LT(block, last);
  EXPECT_GT(block, c.find(kInjectionSentinel));  // after the first occurrence
  EXPECT_NE(c.find("SKILLS\n\n---\n\nOptimize the architecture named Model again."), std::string::npos);
  EXPECT_EQ(InjectSkills(m, ""), m);
  nlohmann::json none = {{{"role", "user"}, {"content", "no sentinel"}}};
  const std::string appended = InjectSkills(none, "S")[0]["content"];
  EXPECT_EQ(appended.find("no sentinel\n\n---\n## [Skill Library]"), 0u);
  EXPECT_EQ(appended.substr(appended.size() - 6), "S\n\n---");
  nlohmann::json sys = {{{"role", "system"}, {"content", "SYS"}}, {{"role", "user"}, {"content", kPrompt}}};
  auto s = InjectSkills(sys, "S");
  EXPECT_EQ(s[1]["content"], kPrompt);
  EXPECT_EQ(std::string(s[0]["content"]).find("SYS\n\n---\n## [Skill Library]"), 0u);
}

TEST(Selection, SchemesEndWithNull) {
  auto lib = Library(3);
  nlohmann::json m = {{{"role", "user"}, {"content", kPrompt}}};
  auto schemes = BuildSchemes("t1", m, {{"skill_0", "skill_1"}, {}, {"skill_2"}}, lib);
  ASSERT_EQ(schemes.size(), 4u);
  EXPECT_EQ(schemes[0].uid, "t1_scheme0");
  EXPECT_EQ(schemes[0].injected, RenderSkill(lib.skills()[0]) + "\n\n" + RenderSkill(lib.skills()[1]));
  EXPECT_EQ(schemes[1].messages, m);
  EXPECT_EQ(schemes[3].uid, "t1_scheme3");
  EXPECT_EQ(schemes[3].messages, m);
  EXPECT_NE(schemes[2].messages, m);
}

}  // namespace
}  // namespace kgym::skills
