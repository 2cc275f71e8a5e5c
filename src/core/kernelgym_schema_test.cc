#include "core/kernelgym_schema.h"

#include <gtest/gtest.h>

#include <set>

namespace kgym::kernelgym {
namespace {

EvalResult Result(Outcome o, bool compiled, const std::string& code, const std::string& why) {
  EvalResult r;
  r.task_id = "t";
  r.outcome = o;
  r.outcome_detail = why;
  r.error_message = why;
  r.compiled = compiled;
  r.error_code = code;
  r.metadata = {{"device", "cpu"}, {"phase_s", {{"load", 0.1}}}, {"timing_lock", {{"held_s", 1}}}};
  return r;
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

TEST(KernelGymSchema, EveryResponseHasExactlyKernelGymsKeys) {
  const std::set<std::string> want(ResponseKeys().begin(), ResponseKeys().end());
  for (auto o : {Outcome::kCorrect, Outcome::kCompileError, Outcome::kTimeout, Outcome::kInvalid}) {
    auto j = EvaluationResponse(Result(o, true, "", "x"), {});
    EXPECT_EQ(Keys(j), want) << OutcomeName(o);
  }
  EvalResult c = Result(Outcome::kInvalid, false, "", "cancelled");
  EXPECT_EQ(Keys(EvaluationResponse(c, {})), want);
}

TEST(KernelGymSchema, CompileErrorIsFailedWithKernelGymsPrefix) {
  auto j = EvaluationResponse(Result(Outcome::kCompileError, false, "COMPILATION_ERROR", "SyntaxError: x"), {});
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["compiled"], false);
  EXPECT_EQ(j["error_code"], "COMPILATION_ERROR");
  EXPECT_EQ(j["error_message"], "Kernel compilation failed: SyntaxError: x");
}

TEST(KernelGymSchema, MissingModelNewIsAValidationFailure) {
  const std::string msg = "Kernel code validation failed: Code must contain a 'ModelNew' class";
  auto j = EvaluationResponse(Result(Outcome::kCompileError, false, "VALIDATION_ERROR", msg), {});
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["error_message"], msg);
  EXPECT_EQ(j["metadata"]["error"], msg);
}

TEST(KernelGymSchema, TimeoutGoesThroughTheFailedResultPath) {
  EvalResult r = Result(Outcome::kTimeout, true, "TIMEOUT_ERROR", "timed out after 10 s in correctness");
  r.kernel_runtime = 3.0;
  auto j = EvaluationResponse(r, {});
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["compiled"], false);  // KernelGYM's timeout result says compiled false whatever had loaded
  EXPECT_EQ(j["kernel_runtime"], -1.0);
  EXPECT_EQ(j["error_code"], "TIMEOUT_ERROR");
  EXPECT_EQ(j["metadata"]["error"], j["error_message"]);
}

TEST(KernelGymSchema, RuntimeAndCorrectnessFailuresComplete) {
  auto rt = EvaluationResponse(Result(Outcome::kRuntimeError, true, "RUNTIME_ERROR", "IndexError: boom"), {});
  EXPECT_EQ(rt["status"], "completed");
  EXPECT_EQ(rt["compiled"], true);
  EXPECT_EQ(rt["error_message"], "Kernel execution failed: IndexError: boom");
  auto wrong = EvaluationResponse(Result(Outcome::kHacked, true, "CORRECTNESS_ERROR", "hacked (x): y"), {});
  EXPECT_EQ(wrong["status"], "completed");
  EXPECT_EQ(wrong["error_message"], "Kernel produced incorrect results: hacked (x): y");
}

TEST(KernelGymSchema, CancelledIsKernelGymsFailTaskRecord) {
  EvalResult r = Result(Outcome::kInvalid, true, "", "cancelled");
  r.correctness = true;
  auto j = EvaluationResponse(r, {100, 102.5});
  EXPECT_EQ(j["status"], "failed");
  EXPECT_TRUE(j["compiled"].is_null() && j["metadata"].is_null() && j["speedup"].is_null());
  EXPECT_EQ(j["error_message"], "Task cancelled");
  EXPECT_EQ(j["error_code"], "SYSTEM_ERROR");
  EXPECT_DOUBLE_EQ(j["processing_time"].get<double>(), 2.5);
}

TEST(KernelGymSchema, MetadataKeepsOnlyKernelGymsKeys) {
  EvalResult r = Result(Outcome::kCorrect, true, "", "correct on 7 trials");
  r.correctness = true;
  r.speedup = 2;
  r.metadata["num_custom_kernels"] = 1;
  r.metadata["correctness_trials"] = "(7 / 7)";
  auto j = EvaluationResponse(r, {});
  EXPECT_EQ(Keys(j["metadata"]), (std::set<std::string>{"device", "num_custom_kernels", "correctness_trials"}));
  EXPECT_TRUE(j["error_message"].is_null() && j["error_code"].is_null());
  EXPECT_EQ(j["speedup"], 2.0);
}

TEST(KernelGymSchema, TimesAreFilled) {
  auto j = EvaluationResponse(Result(Outcome::kCorrect, true, "", ""), {1.7e9, 1.7e9 + 4});
  ASSERT_TRUE(j["submitted_at"].is_string());
  EXPECT_EQ(j["submitted_at"].get<std::string>().back(), 'Z');
  EXPECT_DOUBLE_EQ(j["processing_time"].get<double>(), 4.0);
  EXPECT_TRUE(EvaluationResponse(Result(Outcome::kCorrect, true, "", ""), {})["processing_time"].is_null());
}

TEST(KernelGymSchema, SimpleResultHasNoReferenceAndNullCorrectnessWhenUnchecked) {
  EvalResult r = Result(Outcome::kCorrect, true, "", "");
  r.correctness = true;
  r.kernel_runtime = 0.5;
  auto j = SimpleResult(r, false, {});
  EXPECT_FALSE(j.contains("reference_runtime") || j.contains("speedup") || j.contains("status"));
  EXPECT_TRUE(j["correctness"].is_null());
  EXPECT_EQ(j["metadata"]["correctness_skipped"], "no_expected_outputs");
  EXPECT_EQ(SimpleResult(r, true, {})["correctness"], true);
  EXPECT_EQ(SimpleStatus(Result(Outcome::kRuntimeError, true, "RUNTIME_ERROR", "x")), "failed");
  EXPECT_EQ(SimpleStatus(Result(Outcome::kIncorrect, true, "CORRECTNESS_ERROR", "x")), "completed");
}

}  // namespace
}  // namespace kgym::kernelgym
