#include "server/request_parse.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

using nlohmann::json;

const char* kRef = "import torch\nclass Model(torch.nn.Module):\n  def forward(self, x): return x.relu()\n";
const char* kKernel = "import torch\nclass ModelNew(torch.nn.Module):\n  def forward(self, x): return x.relu()\n";

// The payload the Dr.Kernel reward client sends (research/kernelgym.md §1.10).
json DrKernelPayload() {
  return {{"task_id", "parallel_task_000001_abcdef12"},
          {"reference_code", kRef},
          {"kernel_code", kKernel},
          {"backend", "triton"},
          {"num_correct_trials", 5},
          {"num_perf_trials", 100},
          {"timeout", 300},
          {"priority", "normal"},
          {"entry_point", "Model"},
          {"is_valid", false},
          {"verbose_errors", true},
          {"enable_profiling", true},
          {"detect_decoy_kernel", true},
          {"reference_backend", nullptr}};
}

TEST(ParseEvaluationRequest, AcceptsTheDrKernelPayload) {
  ParsedRequest p;
  ASSERT_TRUE(ParseEvaluationRequest(DrKernelPayload(), true, &p).ok());
  EXPECT_EQ(p.job.id, "parallel_task_000001_abcdef12");
  EXPECT_EQ(p.job.request.num_perf_trials, 100);
  EXPECT_EQ(p.job.request.timeout_s, 300);
  EXPECT_TRUE(p.job.request.detect_decoy);  // backend triton
  EXPECT_TRUE(p.job.request.enable_profiling);
  EXPECT_EQ(p.job.priority, Priority::kNormal);
  EXPECT_FALSE(p.precheck_failure.has_value());
  EXPECT_TRUE(p.job.request.extra.contains("detect_decoy_kernel"));  // unknown field kept, not rejected
}

TEST(ParseEvaluationRequest, RejectsOutOfRangeAndMissingFieldsNamingThem) {
  json b = DrKernelPayload();
  b["num_perf_trials"] = 1001;
  b["timeout"] = 5;
  b["backend"] = "tilelang";
  b.erase("kernel_code");
  ParsedRequest p;
  Status s = ParseEvaluationRequest(b, true, &p);
  ASSERT_FALSE(s.ok());
  for (const char* field : {"num_perf_trials", "timeout", "backend", "kernel_code"})
    EXPECT_NE(s.message().find(field), std::string::npos) << field << " in " << s.message();
  EXPECT_EQ(s.message().rfind("Request validation failed: ", 0), 0u);
}

TEST(ParseEvaluationRequest, LimitsOnIdAndCode) {
  ParsedRequest p;
  json b = DrKernelPayload();
  b["task_id"] = std::string(101, 'x');
  EXPECT_FALSE(ParseEvaluationRequest(b, true, &p).ok());
  b = DrKernelPayload();
  b["kernel_code"] = "   short   ";
  EXPECT_FALSE(ParseEvaluationRequest(b, true, &p).ok());
  b = DrKernelPayload();
  b["reference_code"] = std::string(100001, 'a');
  EXPECT_FALSE(ParseEvaluationRequest(b, true, &p).ok());
  b = DrKernelPayload();
  b.erase("reference_code");  // required by the kernelbench workflow
  EXPECT_FALSE(ParseEvaluationRequest(b, true, &p).ok());
  b = DrKernelPayload();
  b["num_correct_trials"] = 20;
  b["num_warmup"] = 0;
  EXPECT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
}

TEST(ParseEvaluationRequest, FlagResolutionFollowsKernelGym) {
  json b = DrKernelPayload();
  b["backend"] = "cuda";
  b["measure_performance"] = false;
  b["run_performance"] = true;  // run_* overrides
  b["enable_triton_detection"] = true;
  b["run_triton_detection"] = false;
  ParsedRequest p;
  ASSERT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  EXPECT_TRUE(p.job.request.measure_performance);
  EXPECT_FALSE(p.job.request.detect_decoy);
  b = DrKernelPayload();
  b["backend"] = "cuda";
  ASSERT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  EXPECT_FALSE(p.job.request.detect_decoy);  // default: only for triton
}

TEST(ParseEvaluationRequest, WorkflowChecksBecomeResults) {
  json b = DrKernelPayload();
  b["kernel_code"] = "import torch\nclass Other(torch.nn.Module): pass\n";
  ParsedRequest p;
  ASSERT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  ASSERT_TRUE(p.precheck_failure.has_value());
  EXPECT_EQ(p.precheck_failure->error_code, "VALIDATION_ERROR");
  EXPECT_EQ(p.precheck_failure->Status(true), "failed");
  EXPECT_NE(p.precheck_failure->error_message.find("ModelNew"), std::string::npos);
  b = DrKernelPayload();
  b["use_reference_cache"] = true;
  ASSERT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  ASSERT_TRUE(p.precheck_failure.has_value());
  EXPECT_NE(p.precheck_failure->error_message.find("uuid"), std::string::npos);
}

TEST(ValidationErrorBody, HasKernelGymShape) {
  json j = ValidationErrorBody("Request validation failed: x");
  EXPECT_EQ(j["error"], "RequestValidationError");
  EXPECT_EQ(j["error_code"], "VALIDATION_ERROR");
  EXPECT_TRUE(j["task_id"].is_null());
  EXPECT_EQ(j["timestamp"].get<std::string>().back(), 'Z');
}

}  // namespace
}  // namespace kgym
