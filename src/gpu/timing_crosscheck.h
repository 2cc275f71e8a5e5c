// Cross-checking per-call GPU spans from the CUPTI timeline against CUDA-event and host-clock samples of the
// same calls, and the sample statistics timing reports.
//
// The three measures differ for known reasons: CUDA events recorded on the current stream miss work on other
// streams (events < span: the side-stream hack), and include launch latency while the GPU idles
// (events > span for launch-bound calls); host time around a device-wide sync adds the sync's latency. The
// disagreement is reported signed, (other - span) / span, on the medians; it is flagged when its magnitude
// exceeds the threshold. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kgym::gpu {

struct SampleStats {
  size_t n = 0;
  double median = 0, mean = 0, stddev = 0, cv = 0, min = 0, max = 0;  // stddev is the sample (n-1) one
  nlohmann::json ToJson() const;
};

// Statistics of `samples` (any order); all zero when empty.
SampleStats Summarize(std::vector<double> samples);

struct MeasureAgreement {
  bool present = false;  // samples were given
  double median_us = 0;
  double rel_diff = 0;               // (median_other - median_span) / median_span
  double max_abs_call_rel_diff = 0;  // over calls present in both
  size_t calls_beyond_threshold = 0;
  bool flagged = false;
};

struct TimingCrossCheck {
  double span_median_us = 0;
  MeasureAgreement events;
  MeasureAgreement host;
  double threshold = 0;
  bool flagged = false;     // events or host flagged
  std::string explanation;  // one sentence per flagged measure, with the numbers; empty if none
  nlohmann::json ToJson() const;
};

// `span_us[i]`, `event_us[i]`, `host_us[i]` are the same call i (CUPTI span, CUDA events, host clock).
// event_us or host_us may be empty (not measured) or shorter than span_us (only the common prefix is
// compared per call; medians use every sample given). `threshold` is relative, e.g. 0.05.
TimingCrossCheck CrossCheckTiming(const std::vector<double>& span_us, const std::vector<double>& event_us,
                                  const std::vector<double>& host_us, double threshold);

}  // namespace kgym::gpu
