// Coverage: how much of the GPU time of a set of calls ran in kernels compiled from the candidate.
//
// Attribution is kernel by kernel with CandidateKernelNames (exact names, kernel_names.h); everything else
// (PyTorch, cuBLAS, cuDNN, memcpy/memset) is not the candidate's. Times are GPU time only: sums of operation
// durations from the CUPTI timeline (KernelGYM mixed CPU time into the denominator and double-counted aten
// ops; kgym does neither). The KernelGYM metadata keys are filled so that Dr.Kernel's reward client computes
// the profiling reward from them unchanged: num_* count distinct kernel names (its profiler rows), times are
// in microseconds, and the two strings use its exact formats.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/kernel_names.h"
#include "gpu/kernel_timeline.h"

namespace kgym::gpu {

struct CoverageOptions {
  bool include_memory_ops = true;  // memcpy/memset count as non-candidate GPU time
  size_t top_k = 10;
  double coverage_floor = 0.0;  // time coverage below this is reported (below_floor); 0 disables
};

struct KernelAggregate {
  std::string name;          // raw name
  std::string display_name;  // demangled
  bool custom = false;
  size_t launches = 0;
  uint64_t total_ns = 0;
};

struct CoverageReport {
  size_t custom_launches = 0;
  size_t total_launches = 0;
  size_t num_custom_kernels = 0;  // distinct names
  size_t num_total_kernels = 0;
  uint64_t custom_ns = 0;
  uint64_t total_ns = 0;
  uint64_t busy_ns = 0;  // union of all intervals (for reference; ratios use sums)
  double coverage_floor = 0.0;
  std::vector<KernelAggregate> kernels;  // every distinct name, by total time descending
  size_t top_k = 10;

  double custom_time_us() const { return custom_ns / 1e3; }
  double total_time_us() const { return total_ns / 1e3; }
  double time_ratio() const { return total_ns > 0 ? static_cast<double>(custom_ns) / total_ns : 0.0; }
  double number_ratio() const {
    return num_total_kernels > 0 ? static_cast<double>(num_custom_kernels) / num_total_kernels : 0.0;
  }
  bool below_floor() const { return coverage_floor > 0.0 && time_ratio() < coverage_floor; }

  // "Run X custom kernels / Total Y kernels, Coverage: Z%" (Z with two decimals, like Python's {:.2%}).
  std::string TritonKernelCoverageString() const;
  // "Custom kernel CUDA time: Xus / Total time: Yus, Coverage: Z%".
  std::string CudaTimeCoverageString() const;
  // num_custom_kernels, num_total_kernels, custom_kernel_cuda_time_in_profiling_us,
  // total_kernel_run_time_in_profiling_us, triton_kernel_coverage, custom_kernel_cuda_time_coverage.
  nlohmann::json KernelGymMetadata() const;
  // kgym's richer form: custom_time_us, total_time_us, ratio, launches, busy, floor, top-k kernels.
  nlohmann::json ToJson() const;
};

CoverageReport ComputeCoverage(const std::vector<const TimelineOp*>& ops, const CandidateKernelNames& names,
                               const CoverageOptions& options = {});

// The Dr.Kernel usage rule on the two detection runs (inference mode and grad enabled): the candidate's
// kernels are "used" only if each run launched at least one of them; otherwise the candidate is a decoy.
// Unlike KernelGYM, a run with no GPU work at all is a decoy too (there is no profiler that might have
// failed: an empty CUPTI timeline from a working recorder means nothing ran). The caller decides whether
// the recorder worked (RecordStream::errors / dropped_records).
struct UsageVerdict {
  bool decoy = false;
  std::string reason;  // empty when not a decoy
};
UsageVerdict JudgeUsage(const CoverageReport& detect_nograd, const CoverageReport& detect_grad);

}  // namespace kgym::gpu
