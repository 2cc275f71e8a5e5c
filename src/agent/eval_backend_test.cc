#include "agent/eval_backend.h"

#include <gtest/gtest.h>

namespace kgym::agent {
namespace {

// The body the agent posts is the Dr.Kernel reward client's (research/kernelgym.md §1.10), its request fields named by
// the request table: the same keys and values as before the table, `size` only when set.
TEST(GymPayload, IsTheRewardClientsBody) {
  EvalRequest req;
  req.task_id = "t1";
  req.reference_code = "ref";
  req.kernel_code = "kernel";
  req.num_perf_trials = 10;
  req.timeout_s = 600;
  const nlohmann::json want = {{"task_id", "t1"},
                               {"reference_code", "ref"},
                               {"kernel_code", "kernel"},
                               {"backend", "triton"},
                               {"num_correct_trials", 5},
                               {"num_perf_trials", 10},
                               {"timeout", 600},
                               {"priority", "normal"},
                               {"entry_point", "Model"},
                               {"is_valid", false},
                               {"verbose_errors", true},
                               {"enable_profiling", true},
                               {"detect_decoy_kernel", true},
                               {"reference_backend", nullptr},
                               {"kgym_result", true}};
  EXPECT_EQ(GymPayload(req, false), want);
  EXPECT_TRUE(GymPayload(req, false)["timeout"].is_number_integer());
  req.size = "small";
  req.reference_backend = "torch_compile";
  const nlohmann::json j = GymPayload(req, true);
  EXPECT_EQ(j["size"], "small");
  EXPECT_EQ(j["reference_backend"], "torch_compile");
  EXPECT_EQ(j["is_valid"], true);
}

}  // namespace
}  // namespace kgym::agent
