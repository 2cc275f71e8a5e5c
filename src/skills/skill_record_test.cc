#include "skills/skill_record.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

nlohmann::json Good() {
  return {{"name", "warp_shuffle_reduce"},
          {"description", "Reduce within a warp with shuffles"},
          {"scope", "task_specific/reduction"},
          {"tags", {"reduction", "warp"}},
          {"content", "## Motivation\nx\n## Key Idea\ny\n## Example\nz\n"},
          {"verify_speedup", 1.5},
          {"origin", "kept"}};
}

TEST(SkillRecord, RoundTripKeepsEveryField) {
  SkillRecord s;
  ASSERT_TRUE(SkillFromJson(Good(), &s).ok());
  EXPECT_EQ(s.tags.size(), 2u);
  EXPECT_EQ(*s.verify_speedup, 1.5);
  EXPECT_EQ(s.ToJson(), Good());
}

TEST(SkillRecord, ValidationNamesTheBadField) {
  struct Case {
    const char* field;
    nlohmann::json value;
  } cases[] = {{"name", ""},          {"description", 3},       {"scope", "specific"}, {"content", "  \n"},
               {"tags", "reduction"}, {"verify_speedup", -1.0}, {"uses", 1.5},         {"scope", "task_specific/"}};
  for (const auto& c : cases) {
    auto j = Good();
    j[c.field] = c.value;
    SkillRecord s;
    Status st = SkillFromJson(j, &s);
    ASSERT_FALSE(st.ok()) << c.field;
    EXPECT_NE(st.message().find(std::string("field '") + c.field + "'"), std::string::npos) << st.message();
  }
  auto j = Good();
  j.erase("content");
  SkillRecord s;
  EXPECT_NE(SkillFromJson(j, &s).message().find("'content' is missing"), std::string::npos);
  j = Good();
  j["successes"] = 2;  // more successes than uses
  EXPECT_NE(SkillFromJson(j, &s).message().find("'successes'"), std::string::npos);
}

TEST(SkillRecord, TagsAreOptional) {
  auto j = Good();
  j.erase("tags");
  SkillRecord s;
  ASSERT_TRUE(SkillFromJson(j, &s).ok());
  EXPECT_TRUE(s.tags.empty());
}

TEST(SkillRecord, NormalizeName) {
  EXPECT_EQ(NormalizeSkillName("Warp Shuffle-Reduce!"), "warp_shuffle-reduce_");
  EXPECT_EQ(NormalizeSkillName("tl.dot/fp16"), "tl_dot_fp16");
}

TEST(SkillRecord, RenderingMatchesInjectionFormat) {
  SkillRecord s;
  ASSERT_TRUE(SkillFromJson(Good(), &s).ok());
  s.content = "\n  body text \n\n";
  EXPECT_EQ(RenderSkill(s),
            "---\nname: warp_shuffle_reduce\ndescription: Reduce within a warp with shuffles\n"
            "scope: task_specific/reduction\ntags: [reduction, warp]\n---\n\nbody text\n");
  s.tags.clear();
  EXPECT_NE(RenderSkill(s).find("tags: []\n"), std::string::npos);
}

TEST(SkillRecord, CandidateList) {
  SkillRecord a, b;
  ASSERT_TRUE(SkillFromJson(Good(), &a).ok());
  b = a;
  b.name = "other";
  b.tags.clear();
  EXPECT_EQ(RenderCandidateList({&a, &b}),
            " 1. **warp_shuffle_reduce**  [scope=task_specific/reduction]  [tags: reduction, warp]\n"
            "    Reduce within a warp with shuffles\n"
            " 2. **other**  [scope=task_specific/reduction]\n"
            "    Reduce within a warp with shuffles");
  EXPECT_EQ(RenderCandidateList({}), "(skill library is empty)");
}

}  // namespace
}  // namespace kgym::skills
