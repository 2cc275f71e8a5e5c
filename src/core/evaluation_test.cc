#include "core/evaluation.h"

#include <gtest/gtest.h>

namespace kgym {

TEST(Outcome, NamesRoundTrip) {
  for (auto o :
       {Outcome::kCorrect, Outcome::kIncorrect, Outcome::kCompileError, Outcome::kRuntimeError, Outcome::kTimeout,
        Outcome::kCrashed, Outcome::kResourceExhausted, Outcome::kHacked, Outcome::kInvalid}) {
    EXPECT_EQ(OutcomeFromName(OutcomeName(o)), o);
  }
  EXPECT_FALSE(OutcomeFromName("nonsense").has_value());
}

TEST(EvalResult, StatusCompatMarksCompileErrorsFailed) {
  EvalResult r;
  r.outcome = Outcome::kCompileError;
  EXPECT_EQ(r.Status(false), "completed");
  EXPECT_EQ(r.Status(true), "failed");
  r.outcome = Outcome::kIncorrect;
  EXPECT_EQ(r.Status(true), "completed");
}

TEST(EvalResult, JsonCarriesKernelGymFieldsAndRoundTrips) {
  EvalResult r;
  r.task_id = "t1";
  r.outcome = Outcome::kCorrect;
  r.compiled = r.correctness = true;
  r.reference_runtime = 2.0;
  r.kernel_runtime = 1.0;
  r.speedup = 2.0;
  r.kernel_timing = TimingStats{3, 1.0, 1.1, 0.9, 1.4, 0.2, {0.9, 1.0, 1.4}};
  auto j = r.ToJson();
  for (const char* k :
       {"task_id", "status", "compiled", "correctness", "decoy_kernel", "reference_runtime", "kernel_runtime",
        "speedup", "metadata", "error_message", "error_code", "outcome", "outcome_detail"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["error_message"].is_null());
  auto back = EvalResult::FromJson(j);
  EXPECT_EQ(back.outcome, Outcome::kCorrect);
  EXPECT_DOUBLE_EQ(back.speedup, 2.0);
  ASSERT_TRUE(back.kernel_timing.has_value());
  EXPECT_EQ(back.kernel_timing->samples_ms.size(), 3u);
}

}  // namespace kgym
