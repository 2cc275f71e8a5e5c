#include "gpu/coverage.h"

#include <gtest/gtest.h>

namespace kgym::gpu {
namespace {

TimelineOp Op(const std::string& name, uint64_t start, uint64_t end, OpKind kind = OpKind::kKernel) {
  TimelineOp op;
  op.kind = kind;
  op.name = name;
  op.display_name = Demangle(name);
  op.start_ns = start;
  op.end_ns = end;
  return op;
}

std::vector<const TimelineOp*> Ptrs(const std::vector<TimelineOp>& ops) {
  std::vector<const TimelineOp*> out;
  for (const TimelineOp& op : ops) out.push_back(&op);
  return out;
}

TEST(CoverageTest, LazyCandidateHasNearZeroCoverage) {
  // One trivial Triton kernel, the heavy lifting in cuBLAS and aten: Dr.Kernel's "lazy optimization".
  std::vector<TimelineOp> ops{
      Op("copy_kernel", 0, 2000),                                                     // 2 us, candidate
      Op("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", 3000, 903000),  // 900 us
      Op("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", 904000,
         954000),                         // 50 us
      Op("copy_kernel", 960000, 962000),  // 2 us, candidate again
  };
  CandidateKernelNames names;
  names.AddTritonKernel("copy_kernel");
  CoverageReport r = ComputeCoverage(Ptrs(ops), names);
  EXPECT_EQ(r.custom_launches, 2u);
  EXPECT_EQ(r.total_launches, 4u);
  EXPECT_EQ(r.num_custom_kernels, 1u);  // distinct names, like KernelGYM's profiler rows
  EXPECT_EQ(r.num_total_kernels, 3u);
  EXPECT_EQ(r.custom_ns, 4000u);
  EXPECT_EQ(r.total_ns, 954000u);
  EXPECT_DOUBLE_EQ(r.custom_time_us(), 4.0);
  EXPECT_DOUBLE_EQ(r.total_time_us(), 954.0);
  EXPECT_NEAR(r.time_ratio(), 4.0 / 954.0, 1e-12);
  EXPECT_LT(r.time_ratio(), 0.01);
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.kernels[0].name, "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32");  // by time
  EXPECT_FALSE(r.kernels[0].custom);
  EXPECT_EQ(r.kernels[2].name, "copy_kernel");
  EXPECT_EQ(r.kernels[2].launches, 2u);
  EXPECT_TRUE(r.kernels[2].custom);
}

TEST(CoverageTest, FusedCandidateHasFullCoverage) {
  std::vector<TimelineOp> ops{Op("fused_gemm_relu", 0, 500000), Op("fused_gemm_relu", 500000, 1000000)};
  CandidateKernelNames names;
  names.AddTritonKernel("fused_gemm_relu");
  CoverageReport r = ComputeCoverage(Ptrs(ops), names);
  EXPECT_DOUBLE_EQ(r.time_ratio(), 1.0);
  EXPECT_DOUBLE_EQ(r.number_ratio(), 1.0);
}

TEST(CoverageTest, KernelGymStringsAndKeys) {
  std::vector<TimelineOp> ops{Op("mine", 0, 1234), Op("theirs_a", 2000, 5000), Op("theirs_b", 6000, 8000)};
  CandidateKernelNames names;
  names.AddTritonKernel("mine");
  CoverageReport r = ComputeCoverage(Ptrs(ops), names);
  EXPECT_EQ(r.TritonKernelCoverageString(), "Run 1 custom kernels / Total 3 kernels, Coverage: 33.33%");
  EXPECT_EQ(r.CudaTimeCoverageString(), "Custom kernel CUDA time: 1.23us / Total time: 6.23us, Coverage: 19.79%");
  nlohmann::json m = r.KernelGymMetadata();
  EXPECT_EQ(m["num_custom_kernels"], 1);
  EXPECT_EQ(m["num_total_kernels"], 3);
  EXPECT_DOUBLE_EQ(m["custom_kernel_cuda_time_in_profiling_us"].get<double>(), 1.234);
  EXPECT_DOUBLE_EQ(m["total_kernel_run_time_in_profiling_us"].get<double>(), 6.234);
  EXPECT_EQ(m.size(), 6u);
  // Dr.Kernel's client: time_coverage = custom / total, number_coverage = custom / total kernels.
  double time_cov = m["custom_kernel_cuda_time_in_profiling_us"].get<double>() /
                    m["total_kernel_run_time_in_profiling_us"].get<double>();
  EXPECT_DOUBLE_EQ(time_cov, r.time_ratio());
}

TEST(CoverageTest, EmptyProfileFormatsZeros) {
  CoverageReport r = ComputeCoverage({}, CandidateKernelNames());
  EXPECT_EQ(r.TritonKernelCoverageString(), "Run 0 custom kernels / Total 0 kernels, Coverage: 0.00%");
  EXPECT_EQ(r.CudaTimeCoverageString(), "Custom kernel CUDA time: 0.00us / Total time: 0.00us, Coverage: 0.00%");
  EXPECT_EQ(r.time_ratio(), 0.0);
  EXPECT_TRUE(r.ToJson()["top_kernels"].empty());
}

TEST(CoverageTest, MemoryOpsCountAsNonCandidateTimeUnlessExcluded) {
  std::vector<TimelineOp> ops{Op("mine", 0, 1000), Op("Memcpy DtoD", 1000, 4000, OpKind::kMemcpy)};
  CandidateKernelNames names;
  names.AddTritonKernel("mine");
  names.AddTritonKernel("Memcpy DtoD");  // a candidate cannot claim a memcpy by naming a kernel after it
  CoverageReport with = ComputeCoverage(Ptrs(ops), names);
  EXPECT_EQ(with.total_ns, 4000u);
  EXPECT_EQ(with.custom_ns, 1000u);
  CoverageOptions opts;
  opts.include_memory_ops = false;
  CoverageReport without = ComputeCoverage(Ptrs(ops), names, opts);
  EXPECT_EQ(without.total_ns, 1000u);
  EXPECT_DOUBLE_EQ(without.time_ratio(), 1.0);
}

TEST(CoverageTest, BusyTimeAndTopKAndFloor) {
  std::vector<TimelineOp> ops;
  for (int i = 0; i < 15; ++i) ops.push_back(Op("k" + std::to_string(i), 0, 100 + i));  // all overlap
  CandidateKernelNames names;
  names.AddTritonKernel("k0");
  CoverageOptions opts;
  opts.top_k = 5;
  opts.coverage_floor = 0.2;
  CoverageReport r = ComputeCoverage(Ptrs(ops), names, opts);
  EXPECT_EQ(r.busy_ns, 114u);
  EXPECT_TRUE(r.below_floor());
  nlohmann::json j = r.ToJson();
  ASSERT_EQ(j["top_kernels"].size(), 5u);
  EXPECT_EQ(j["top_kernels"][0]["name"], "k14");
  EXPECT_EQ(j["below_floor"], true);
  EXPECT_DOUBLE_EQ(j["busy_time_us"].get<double>(), 0.114);
}

TEST(CoverageTest, DecoyRule) {
  CandidateKernelNames names;
  names.AddTritonKernel("mine");
  std::vector<TimelineOp> uses{Op("mine", 0, 10), Op("aten_thing", 10, 20)};
  std::vector<TimelineOp> bypasses{Op("aten_thing", 0, 10)};
  CoverageReport used = ComputeCoverage(Ptrs(uses), names);
  CoverageReport unused = ComputeCoverage(Ptrs(bypasses), names);
  CoverageReport nothing = ComputeCoverage({}, names);

  EXPECT_FALSE(JudgeUsage(used, used).decoy);
  EXPECT_TRUE(JudgeUsage(used, used).reason.empty());
  UsageVerdict v = JudgeUsage(unused, unused);
  EXPECT_TRUE(v.decoy);
  EXPECT_NE(v.reason.find("inference mode launched 0 candidate kernels of 1 GPU operations"), std::string::npos)
      << v.reason;
  EXPECT_TRUE(JudgeUsage(used, unused).decoy);      // the grad-enabled path bypasses the kernel
  EXPECT_TRUE(JudgeUsage(nothing, nothing).decoy);  // no GPU work at all is not "a profiler bug" here
}

}  // namespace
}  // namespace kgym::gpu
