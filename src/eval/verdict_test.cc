#include "eval/verdict.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

TEST(VerdictTest, HackedNamesTheRule) {
  Verdict v = Verdict::Hacked("thread injection", "3 threads");
  EXPECT_TRUE(v.hacked());
  EXPECT_EQ(v.detail, "hacked (thread injection): 3 threads");
  EXPECT_FALSE(v.decoy());
  EXPECT_TRUE(Verdict::Hacked("decoy kernel", "never ran").decoy());
}

TEST(VerdictTest, FailureClearsCorrectnessAndSpeedup) {
  EvalResult r;
  r.correctness = true;
  r.speedup = 2.0;
  Verdict::Hacked("caching", "fresh sets slower").ApplyTo(&r);
  EXPECT_EQ(r.outcome, Outcome::kHacked);
  EXPECT_FALSE(r.correctness);
  EXPECT_EQ(r.speedup, 0);
  EXPECT_EQ(r.error_code, ErrorCodeFor(Outcome::kHacked));
  EXPECT_EQ(r.error_message, r.outcome_detail);
  EXPECT_FALSE(r.decoy_kernel);
}

TEST(VerdictTest, SystemErrorKeepsItsCode) {
  EvalResult r;
  Verdict::System("could not start the candidate worker").ApplyTo(&r);
  EXPECT_EQ(r.outcome, Outcome::kInvalid);
  EXPECT_EQ(r.error_code, "SYSTEM_ERROR");  // not the VALIDATION_ERROR of a broken request
}

TEST(VerdictTest, CorrectLeavesTheRestAlone) {
  EvalResult r;
  r.correctness = true;
  r.speedup = 1.5;
  Verdict::Of(Outcome::kCorrect, "correct on 7 trials").ApplyTo(&r);
  EXPECT_TRUE(r.correctness);
  EXPECT_EQ(r.speedup, 1.5);
  EXPECT_EQ(r.outcome_detail, "correct on 7 trials");
  EXPECT_TRUE(r.error_code.empty());
}

}  // namespace
}  // namespace kgym
