#include "skills/verification.h"

#include <gtest/gtest.h>

namespace kgym::skills {
namespace {

SkillRecord Skill(const std::string& name, const std::string& content) {
  SkillRecord s;
  s.name = name;
  s.description = "about " + name;
  s.content = content;
  return s;
}

TEST(Verification, Rule) {
  EXPECT_TRUE(VerificationPasses({"t", true, 1.2, 1.0}));
  EXPECT_TRUE(VerificationPasses({"t", true, 2.4, 2.0}));
  EXPECT_FALSE(VerificationPasses({"t", true, 2.3, 2.0}));   // < 1.2x turn 1
  EXPECT_FALSE(VerificationPasses({"t", true, 1.19, 0.5}));  // < 1.2 absolute
  EXPECT_FALSE(VerificationPasses({"t", false, 3.0, 1.0}));  // incorrect
  EXPECT_FALSE(VerificationPasses({"t", true, 3.0, 0.0}));   // turn 1 was not correct
}

TEST(Verification, InjectionAddsSkillAfterOriginal) {
  auto s = Skill("a", "body");
  EXPECT_EQ(VerificationInjection(std::nullopt, s), RenderSkill(s));
  EXPECT_EQ(VerificationInjection(std::string("OLD"), s), "OLD\n\n---\n\n" + RenderSkill(s));
}

TEST(Verification, AdmissionAndSecondTask) {
  CandidateSkill c{Skill("a", "x"), "t1", {{"t1", true, 1.5, 1.0}, {"t1", true, 1.8, 1.0}, {"t2", true, 1.0, 1.0}}};
  auto a = AdmitCandidate(c);
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(a.verify_speedup, 1.8);
  VerifyOptions strict;
  strict.require_second_task = true;
  EXPECT_FALSE(AdmitCandidate(c, strict).admitted);
  c.runs.push_back({"t2", true, 1.3, 1.0});
  EXPECT_TRUE(AdmitCandidate(c, strict).admitted);
  CandidateSkill only_other{Skill("b", "x"), "t1", {{"t2", true, 5.0, 1.0}}};
  EXPECT_FALSE(AdmitCandidate(only_other).admitted);
  EXPECT_FALSE(ChooseSecondTask("t1", {"t1"}, 0));
  auto second = ChooseSecondTask("t1", {"t1", "t2", "t3"}, 42);
  ASSERT_TRUE(second);
  EXPECT_NE(*second, "t1");
  EXPECT_EQ(second, ChooseSecondTask("t1", {"t3", "t2", "t1"}, 42));
}

TEST(Verification, StagingKeepsBestPerTaskAndFlushNormalisesNames) {
  SkillStaging st;
  st.Offer("t1", Skill("Tile Shared", "tile the matmul through shared memory blocks"), 1.5);
  st.Offer("t1", Skill("Better One", "use a persistent grid over output tiles"), 2.0);
  st.Offer("t1", Skill("Worse", "unroll loops in the epilogue"), 1.3);
  st.Offer("t2", Skill("old", "fuse bias add with activation after the gemm"), 1.4);
  st.RecordUsage({"old", "old", "other"}, true);
  st.RecordUsage({"old"}, false);
  ASSERT_EQ(st.Staged().size(), 2u);
  std::vector<SkillRecord> lib = {Skill("old", "vectorize loads with 128-bit accesses"),
                                  Skill("better_one", "warp shuffle reductions for row sums")};
  FlushOptions no_dedup;
  no_dedup.near_duplicate_threshold = 0;
  auto r = FlushStaged(lib, st, no_dedup);
  ASSERT_EQ(r.skills.size(), 4u);
  EXPECT_EQ(r.added, (std::vector<std::string>{"better_one_1", "old_1"}));
  EXPECT_EQ(*r.skills[2].verify_speedup, 2.0);
  EXPECT_EQ(r.skills[0].uses, 2);  // counted once per trajectory
  EXPECT_EQ(r.skills[0].successes, 1);
}

TEST(Verification, NearDuplicatesAreRejected) {
  std::vector<SkillRecord> lib = {
      Skill("online_softmax",
            "## Key Idea\nKeep a running max and a running sum, rescale the sum whenever the "
            "max grows, and fuse the exponent into a single pass over the row."),
      Skill("tile_matmul", "## Key Idea\nStage tiles of A and B through shared memory and accumulate in registers.")};
  auto dup = Skill("one_pass_softmax",
                   "## Key Idea\nKeep a running max and a running sum, rescale the sum when "
                   "the max grows, fusing the exponent into one pass over the row.");
  auto fresh = Skill("bank_conflicts", "## Key Idea\nPad shared arrays by one column to avoid bank conflicts.");
  EXPECT_EQ(NearDuplicateOf(lib, dup, 0.6), "online_softmax");
  EXPECT_FALSE(NearDuplicateOf(lib, fresh, 0.6));
  EXPECT_FALSE(NearDuplicateOf(lib, dup, 0));
  SkillStaging st;
  st.Offer("t1", dup, 1.5);
  st.Offer("t2", fresh, 1.5);
  auto r = FlushStaged(lib, st);
  EXPECT_EQ(r.added, std::vector<std::string>{"bank_conflicts"});
  ASSERT_EQ(r.duplicates.size(), 1u);
  EXPECT_EQ(r.duplicates[0], "one_pass_softmax ~ online_softmax");
}

}  // namespace
}  // namespace kgym::skills
