#include "gpu/coverage.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kgym::gpu {
namespace {

// Python's f"{x:.2f}" for the finite, non-negative values used here.
std::string Fixed2(double x) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", x);
  return buf;
}

// Python's f"{r:.2%}".
std::string Percent2(double r) { return Fixed2(r * 100.0) + "%"; }

}  // namespace

std::string CoverageReport::TritonKernelCoverageString() const {
  return "Run " + std::to_string(num_custom_kernels) + " custom kernels / Total " + std::to_string(num_total_kernels) +
         " kernels, Coverage: " + Percent2(number_ratio());
}

std::string CoverageReport::CudaTimeCoverageString() const {
  return "Custom kernel CUDA time: " + Fixed2(custom_time_us()) + "us / Total time: " + Fixed2(total_time_us()) +
         "us, Coverage: " + Percent2(time_ratio());
}

nlohmann::json CoverageReport::KernelGymMetadata() const {
  return nlohmann::json{{"num_custom_kernels", num_custom_kernels},
                        {"num_total_kernels", num_total_kernels},
                        {"custom_kernel_cuda_time_in_profiling_us", custom_time_us()},
                        {"total_kernel_run_time_in_profiling_us", total_time_us()},
                        {"triton_kernel_coverage", TritonKernelCoverageString()},
                        {"custom_kernel_cuda_time_coverage", CudaTimeCoverageString()}};
}

nlohmann::json CoverageReport::ToJson() const {
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < kernels.size() && i < top_k; ++i) {
    const KernelAggregate& k = kernels[i];
    top.push_back({{"name", k.display_name},
                   {"raw_name", k.name},
                   {"custom", k.custom},
                   {"launches", k.launches},
                   {"time_us", k.total_ns / 1e3},
                   {"share", total_ns > 0 ? static_cast<double>(k.total_ns) / total_ns : 0.0}});
  }
  nlohmann::json j{{"custom_time_us", custom_time_us()},
                   {"total_time_us", total_time_us()},
                   {"ratio", time_ratio()},
                   {"number_ratio", number_ratio()},
                   {"custom_launches", custom_launches},
                   {"total_launches", total_launches},
                   {"num_custom_kernels", num_custom_kernels},
                   {"num_total_kernels", num_total_kernels},
                   {"busy_time_us", busy_ns / 1e3},
                   {"top_kernels", std::move(top)}};
  if (coverage_floor > 0.0) {
    j["coverage_floor"] = coverage_floor;
    j["below_floor"] = below_floor();
  }
  return j;
}

CoverageReport ComputeCoverage(const std::vector<const TimelineOp*>& ops, const CandidateKernelNames& names,
                               const CoverageOptions& options) {
  CoverageReport r;
  r.coverage_floor = options.coverage_floor;
  r.top_k = options.top_k;
  std::map<std::string, KernelAggregate> by_name;
  std::map<std::string, bool> match_cache;  // Matches() demangles; names repeat across launches
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  for (const TimelineOp* op : ops) {
    const bool is_kernel = op->kind == OpKind::kKernel;
    if (!is_kernel && !options.include_memory_ops) continue;
    bool custom = false;
    if (is_kernel) {
      auto it = match_cache.find(op->name);
      if (it == match_cache.end()) it = match_cache.emplace(op->name, names.Matches(op->name)).first;
      custom = it->second;
    }
    KernelAggregate& agg = by_name[op->name];
    if (agg.launches == 0) {
      agg.name = op->name;
      agg.display_name = op->display_name;
      agg.custom = custom;
    }
    ++agg.launches;
    agg.total_ns += op->duration_ns();
    ++r.total_launches;
    r.total_ns += op->duration_ns();
    if (custom) {
      ++r.custom_launches;
      r.custom_ns += op->duration_ns();
    }
    intervals.emplace_back(op->start_ns, op->end_ns);
  }
  r.busy_ns = UnionLengthNs(std::move(intervals));
  r.num_total_kernels = by_name.size();
  for (auto& [name, agg] : by_name) {
    if (agg.custom) ++r.num_custom_kernels;
    r.kernels.push_back(std::move(agg));
  }
  std::stable_sort(r.kernels.begin(), r.kernels.end(),
                   [](const KernelAggregate& a, const KernelAggregate& b) { return a.total_ns > b.total_ns; });
  return r;
}

UsageVerdict JudgeUsage(const CoverageReport& detect_nograd, const CoverageReport& detect_grad) {
  UsageVerdict v;
  const bool nograd_used = detect_nograd.custom_launches > 0;
  const bool grad_used = detect_grad.custom_launches > 0;
  if (nograd_used && grad_used) return v;
  v.decoy = true;
  auto describe = [](const char* run, const CoverageReport& r) {
    return std::string(run) + " launched " + std::to_string(r.custom_launches) + " candidate kernels of " +
           std::to_string(r.total_launches) + " GPU operations";
  };
  v.reason = "decoy: the candidate's own kernels did not run in every detection call (" +
             describe("inference mode", detect_nograd) + "; " + describe("grad enabled", detect_grad) + ")";
  return v;
}

}  // namespace kgym::gpu
