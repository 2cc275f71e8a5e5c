// The checking half of cupti_selftest.cu, compiled by the host compiler so it can use kgym_gpu (C++20).
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/coverage.h"
#include "gpu/cupti_format.h"
#include "gpu/kernel_timeline.h"
#include "gpu/record_stream.h"
#include "gpu/timing_crosscheck.h"

namespace {

int g_failures = 0;

void Expect(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

}  // namespace

extern "C" int kgym_selftest_check(const char* path, const double* event_us, const double* host_us,
                                   int num_side_stream_calls) {
  using namespace kgym::gpu;
  RecordStream rs;
  kgym::Status s = ReadRecordStreamFile(path, ParseOptions{}, &rs);
  if (!s.ok()) {
    std::printf("parse failed: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("stream %s: %zu kernels, %zu memory ops, %zu correlations, %zu markers, %zu errors, %llu dropped\n", path,
              rs.kernels.size(), rs.memory_ops.size(), rs.tag_of_correlation.size(), rs.markers.size(),
              rs.errors.size(), static_cast<unsigned long long>(rs.dropped_records));
  for (const StreamError& e : rs.errors) std::printf("  error %d: %s\n", e.cupti_result, e.message.c_str());
  Expect(rs.errors.empty(), "no CUPTI errors recorded");
  Expect(rs.dropped_records == 0, "no dropped records");
  Expect(rs.last_flush_sequence >= 1, "flush record present");

  KernelTimeline tl = KernelTimeline::FromRecords(rs);
  std::vector<CallSpan> timing = tl.CallsInPhase(KGYM_PHASE_TIMING);
  std::printf("\n%-6s %8s %8s %10s %10s %10s %10s %10s\n", "call", "kernels", "streams", "span_us", "busy_us", "sum_us",
              "event_us", "host_us");
  std::vector<double> spans, events, hosts;
  for (const CallSpan& c : timing) {
    uint32_t i = kgym_tag_call(c.tag);
    bool side = static_cast<int>(i) < num_side_stream_calls;
    std::printf("%-6u %8zu %8zu %10.1f %10.1f %10.1f %10.1f %10.1f\n", i, c.num_kernels, c.num_streams, c.span_ns / 1e3,
                c.busy_ns / 1e3, c.op_sum_ns / 1e3, side ? event_us[i] : 0.0, side ? host_us[i] : 0.0);
    if (side) {
      spans.push_back(c.span_ns / 1e3);
      events.push_back(event_us[i]);
      hosts.push_back(host_us[i]);
    }
  }
  Expect(timing.size() == static_cast<size_t>(num_side_stream_calls) + 2, "every timing call present (incl. empty)");
  for (const CallSpan& c : timing) {
    uint32_t i = kgym_tag_call(c.tag);
    if (static_cast<int>(i) < num_side_stream_calls) {
      Expect(c.num_kernels == 2 && c.num_streams == 2, "call " + std::to_string(i) + ": 2 kernels on 2 streams");
      Expect(c.span_ns / 1e3 > event_us[i],
             "call " + std::to_string(i) + ": span covers the side stream (span > events)");
      Expect(c.span_ns / 1e3 <= host_us[i] * 1.01, "call " + std::to_string(i) + ": span within host time");
    } else if (i == static_cast<uint32_t>(num_side_stream_calls)) {
      Expect(c.empty(), "empty call has no operations");
    } else {
      Expect(c.busy_ns < c.op_sum_ns, "overlapping call: busy < sum (streams overlapped)");
    }
  }

  TimingCrossCheck cc = CrossCheckTiming(spans, events, hosts, 0.05);
  std::printf("\ncross-check: %s\n", cc.ToJson().dump().c_str());
  Expect(cc.events.flagged && cc.events.rel_diff < 0, "CUDA events flagged as missing side-stream work");

  CallSpan mem = tl.Call(kgym_make_tag(KGYM_PHASE_CORRECTNESS, 0));
  Expect(mem.num_memory_ops == 2 && mem.num_kernels == 0, "memcpy + memset attributed to correctness call 0");
  CallSpan other_thread = tl.Call(kgym_make_tag(KGYM_PHASE_CORRECTNESS, 1));
  Expect(other_thread.empty(), "kernel from another thread is not attributed to the tagged call");
  Expect(tl.Call(0).num_kernels >= 4, "warm-up, launch-cost and other-thread kernels are untagged");

  CandidateKernelNames names;
  names.AddCudaSymbol("spin_kernel");
  CoverageReport cov = ComputeCoverage(tl.OpsForTag(kgym_make_tag(KGYM_PHASE_TIMING, 6)), names);
  std::printf("\ncoverage of call 6: %s\n", cov.ToJson().dump().c_str());
  std::printf("kernelgym metadata: %s\n", cov.KernelGymMetadata().dump().c_str());
  Expect(cov.num_custom_kernels == 1 && cov.num_total_kernels == 2, "call 6: 1 of 2 kernels is the candidate's");
  Expect(cov.time_ratio() > 0.3 && cov.time_ratio() < 0.7, "call 6: time coverage about one half");
  return g_failures;
}
