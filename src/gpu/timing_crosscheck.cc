#include "gpu/timing_crosscheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kgym::gpu {

nlohmann::json SampleStats::ToJson() const {
  return nlohmann::json{{"n", n},   {"median", median}, {"mean", mean}, {"std", stddev},
                        {"cv", cv}, {"min", min},       {"max", max}};
}

SampleStats Summarize(std::vector<double> samples) {
  SampleStats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / n;
  if (n > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / (n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  return s;
}

namespace {

MeasureAgreement Compare(const std::vector<double>& span_us, double span_median, const std::vector<double>& other,
                         double threshold) {
  MeasureAgreement a;
  if (other.empty()) return a;
  a.present = true;
  a.median_us = Summarize(other).median;
  a.rel_diff = span_median > 0 ? (a.median_us - span_median) / span_median : 0;
  const size_t common = std::min(span_us.size(), other.size());
  for (size_t i = 0; i < common; ++i) {
    if (span_us[i] <= 0) continue;
    double d = std::fabs(other[i] - span_us[i]) / span_us[i];
    a.max_abs_call_rel_diff = std::max(a.max_abs_call_rel_diff, d);
    if (d > threshold) ++a.calls_beyond_threshold;
  }
  a.flagged = span_median > 0 && std::fabs(a.rel_diff) > threshold;
  return a;
}

std::string Sentence(const char* measure, const MeasureAgreement& a, double span_median, double threshold) {
  char buf[512];
  const char* why = a.rel_diff < 0
                        ? (a.median_us > 0 ? "less time than the GPU spent on the call across all streams (work "
                                             "escaped the measured stream, or the clocks disagree)"
                                           : "no time at all")
                        : "more time than the GPU spent (launch or synchronisation overhead outside the kernels)";
  std::snprintf(buf, sizeof(buf),
                "%s measured a median of %.3f us against a CUPTI span of %.3f us (%+.1f%%, threshold %.1f%%): %s.",
                measure, a.median_us, span_median, a.rel_diff * 100, threshold * 100, why);
  return buf;
}

}  // namespace

TimingCrossCheck CrossCheckTiming(const std::vector<double>& span_us, const std::vector<double>& event_us,
                                  const std::vector<double>& host_us, double threshold) {
  TimingCrossCheck c;
  c.threshold = threshold;
  c.span_median_us = Summarize(span_us).median;
  c.events = Compare(span_us, c.span_median_us, event_us, threshold);
  c.host = Compare(span_us, c.span_median_us, host_us, threshold);
  c.flagged = c.events.flagged || c.host.flagged;
  if (c.events.flagged) c.explanation += Sentence("CUDA events", c.events, c.span_median_us, threshold);
  if (c.host.flagged) {
    if (!c.explanation.empty()) c.explanation += " ";
    c.explanation += Sentence("The host clock", c.host, c.span_median_us, threshold);
  }
  return c;
}

nlohmann::json TimingCrossCheck::ToJson() const {
  auto one = [](const MeasureAgreement& a) -> nlohmann::json {
    if (!a.present) return nullptr;
    return nlohmann::json{{"median_us", a.median_us},
                          {"rel_diff", a.rel_diff},
                          {"max_abs_call_rel_diff", a.max_abs_call_rel_diff},
                          {"calls_beyond_threshold", a.calls_beyond_threshold},
                          {"flagged", a.flagged}};
  };
  return nlohmann::json{{"span_median_us", span_median_us}, {"events", one(events)}, {"host", one(host)},
                        {"threshold", threshold},           {"flagged", flagged},    {"explanation", explanation}};
}

}  // namespace kgym::gpu
