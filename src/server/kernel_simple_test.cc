#include "server/kernel_simple.h"

#include <gtest/gtest.h>

namespace kgym {
namespace {

using nlohmann::json;

const char* kKernel =
    "import torch\nclass ModelNew(torch.nn.Module):\n  def forward(self, x, y): return x + y\n"
    "def get_cases():\n  x = torch.randn(8)\n  return [{\"inputs\": [x, x], \"outputs\": 2 * x}]\n";

TEST(KernelSimple, PayloadBecomesAJobWithAGeneratedReference) {
  ParsedRequest p;
  ASSERT_TRUE(ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", kKernel}, {"num_perf_trials", 7}}, &p).ok());
  const EvalRequest& r = p.job.request;
  EXPECT_EQ(p.job.id, "ks");
  EXPECT_EQ(r.entry_point, "Model");  // the candidate class is ModelNew
  EXPECT_EQ(r.kernel_code, kKernel);
  EXPECT_NE(r.reference_code.find("class Model("), std::string::npos);
  EXPECT_NE(r.reference_code.find("def get_cases():"), std::string::npos);  // the cases' source comes first
  EXPECT_EQ(r.num_perf_trials, 7);
  EXPECT_FALSE(r.detect_decoy);
  EXPECT_TRUE(IsKernelSimple(r));
  EXPECT_TRUE(KernelSimpleChecksCorrectness(r));
  EXPECT_FALSE(p.precheck_failure.has_value());
}

TEST(KernelSimple, WithoutExpectedOutputsNothingIsChecked) {
  ParsedRequest p;
  const std::string code = "import torch\nclass ModelNew(torch.nn.Module):\n  def forward(self, x): return x\n";
  ASSERT_TRUE(ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", code}}, &p).ok());
  EXPECT_FALSE(KernelSimpleChecksCorrectness(p.job.request));
  EXPECT_NE(p.job.request.reference_code.find("class Model(ModelNew)"), std::string::npos);
}

TEST(KernelSimple, AnEntryPointOfAnotherNameGetsTheNewAlias) {
  ParsedRequest p;
  const std::string code = "import torch\nclass Adder(torch.nn.Module):\n  def forward(self, x): return x\n";
  ASSERT_TRUE(ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", code}, {"entry_point", "Adder"}}, &p).ok());
  EXPECT_EQ(p.job.request.entry_point, "Adder");
  EXPECT_NE(p.job.request.kernel_code.find("class AdderNew(Adder):"), std::string::npos);
}

TEST(KernelSimple, MissingClassIsAValidationResultAndBadFieldsAreNamed) {
  ParsedRequest p;
  ASSERT_TRUE(
      ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", "import torch\nclass Other: pass\n"}}, &p).ok());
  ASSERT_TRUE(p.precheck_failure.has_value());
  EXPECT_EQ(p.precheck_failure->error_code, "VALIDATION_ERROR");
  EXPECT_EQ(p.precheck_failure->error_message, "Kernel code validation failed: Code must contain a 'ModelNew' class");
  Status s = ParseKernelSimplePayload({{"task_id", "ks"}}, &p);
  EXPECT_NE(s.message().find("payload.kernel_code is required"), std::string::npos) << s.ToString();
  s = ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", kKernel}, {"timeout", 5}}, &p);
  EXPECT_NE(s.message().find("payload.timeout"), std::string::npos) << s.ToString();
  s = ParseKernelSimplePayload({{"task_id", "ks"}, {"kernel_code", kKernel}, {"cases", 3}}, &p);
  EXPECT_NE(s.message().find("payload.cases"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace kgym
