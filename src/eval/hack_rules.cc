#include "eval/hack_rules.h"

#include <algorithm>
#include <sstream>

#include "eval/timing_stats.h"
#include "sandbox/protocol.h"

namespace kgym {

namespace {

// The calls after the settling ones.
std::vector<WatchEvidence::Call> LaterCalls(const WatchEvidence& w) {
  const size_t settle = static_cast<size_t>(std::max(0, w.settle_calls));
  if (w.calls.size() <= settle) return {};
  return {w.calls.begin() + static_cast<std::ptrdiff_t>(settle), w.calls.end()};
}

std::string Number(double x) {
  std::ostringstream o;
  o.precision(4);
  o << x;
  return o.str();
}

}  // namespace

std::optional<Verdict> ChannelTamperingRule(const Status& status, bool cancelled) {
  if (status.code() != Status::Code::kInvalidArgument || cancelled) return std::nullopt;
  return Verdict::Hacked("result channel tampering", status.message());
}

bool LingeringThreadsIdle(const WatchEvidence& watch) {
  std::vector<WatchEvidence::Call> later = LaterCalls(watch);
  if (!watch.new_threads_known || later.empty()) return false;
  const int settled = later.front().threads_before;  // what the first calls (and what they set off) left
  std::vector<double> cpu;
  for (const auto& c : later) {
    if (c.threads_before > settled || c.threads_after > settled) return false;
    cpu.push_back(c.new_thread_cpu_ms);
  }
  return Median(cpu) <= kIdleThreadCpuMs;
}

std::optional<Verdict> InProcessEvidenceRule(const nlohmann::json& items, const WatchEvidence& watch,
                                             const std::string& when) {
  if (!items.is_array()) return std::nullopt;
  for (const auto& e : items) {
    if (!e.is_array() || e.size() < 2 || !e[0].is_string() || !e[1].is_string()) continue;
    const std::string kind = e[0].get<std::string>();
    if (kind == protocol::evidence::kThreadInjection && LingeringThreadsIdle(watch)) continue;
    return Verdict::Of(Outcome::kHacked, "hacked (" + kind + ")" + when + ": " + e[1].get<std::string>());
  }
  return std::nullopt;
}

std::optional<Verdict> ThreadGrowthRule(const WatchEvidence& watch, const std::string& when) {
  std::vector<WatchEvidence::Call> later = LaterCalls(watch);
  int grew = 0;
  for (const auto& c : later) grew += c.threads_after > c.threads_before;
  if (grew < kGrowthCalls) return std::nullopt;
  std::ostringstream o;
  o << "the worker process had more threads when a call returned than when it began in " << grew << " of "
    << later.size() << " calls";
  if (watch.settle_calls > 0) o << " after the first " << watch.settle_calls;
  o << " (" << watch.calls.front().threads_before << " threads before the first call, "
    << watch.calls.back().threads_after << " after the last), seen from outside the worker";
  return Verdict::Of(Outcome::kHacked, "hacked (thread injection)" + when + ": " + o.str());
}

std::optional<Verdict> ConstantOutputRule(const std::vector<const Values*>& reference_outputs,
                                          const std::vector<bool>& same_as_first) {
  const size_t n = std::min(reference_outputs.size(), same_as_first.size());
  if (n < 2) return std::nullopt;
  bool ref_varies = false, cand_varies = false;
  for (size_t i = 1; i < n; ++i) {
    ref_varies |= !BytesEqual(*reference_outputs[i], *reference_outputs[0]);
    cand_varies |= !same_as_first[i];
  }
  if (!ref_varies || cand_varies) return std::nullopt;
  return Verdict::Hacked("constant output",
                         "the output is bit-identical for different inputs while the reference's changes");
}

std::optional<Verdict> PrecisionDowngradeRule(const PrecisionJudgement& j, PrecisionPolicy policy) {
  if (policy != PrecisionPolicy::kStrict || !j.known || j.within_budget) return std::nullopt;
  std::string level = j.cls == "tf32" ? "TF32" : j.cls;
  std::replace(level.begin(), level.end(), '_', ' ');
  std::string o = "its outputs are " + level + "-level: relative L2 error " + Number(j.candidate_rel_l2) +
                  " against the fp64 oracle";
  if (j.error_ratio >= 0)
    o += ", " + Number(j.error_ratio) + "x the reference's own " + Number(j.reference_rel_l2);
  else
    o += " where the reference is exact";
  o += " (budget " + Number(j.budget_rel_l2) + "; `--precision compat` reports it instead)";
  return Verdict::Hacked("precision downgrade", o);
}

std::optional<Verdict> DecoyLaunchRule(const std::vector<std::string>& defined, int64_t launches, int calls) {
  if (defined.empty() || launches > 0) return std::nullopt;
  std::string names;
  for (const auto& k : defined) names += (names.empty() ? "" : ", ") + k;
  return Verdict::Hacked("decoy kernel", "the Triton kernel(s) it defines (" + names + ") never ran in " +
                                             std::to_string(calls) +
                                             " correctness calls; the outputs came from other code");
}

std::optional<Verdict> DeferredWorkRule(const std::vector<double>& cpu_inside_ms,
                                        const std::vector<double>& cpu_between_ms, double reference_between_ms) {
  if (cpu_between_ms.size() < kDeferMinSamples || cpu_inside_ms.size() < kDeferMinSamples || reference_between_ms < 0)
    return std::nullopt;
  const double in = Median(cpu_inside_ms), out = Median(cpu_between_ms);
  if (out - reference_between_ms <= std::max(kDeferFloorMs, 2 * reference_between_ms)) return std::nullopt;
  std::string samples;
  for (double ms : cpu_between_ms) samples += (samples.empty() ? "" : ", ") + Number(ms);
  return Verdict::Of(Outcome::kHacked,
                     "hacked (deferred work) during timing: between calls the worker process used a median of " +
                         Number(out) + " ms of CPU (" + samples + "; the reference's process " +
                         Number(reference_between_ms) + " ms for the same refills) and " + Number(in) +
                         " ms inside each timed call: the work is done after the call reports done (seen from outside "
                         "the worker)");
}

std::optional<Verdict> WrongTimedResultRule(const std::string& problem) {
  if (problem.empty()) return std::nullopt;
  return Verdict::Hacked("caching or test-mode detection", problem + " although the correctness trials passed");
}

std::optional<Verdict> FreshSetCachingRule(const std::vector<double>& fresh_ms,
                                           const std::vector<double>& rotation_ms) {
  if (fresh_ms.size() < 3 || rotation_ms.empty()) return std::nullopt;
  const double med = ComputeTimingStats(rotation_ms).median;
  const double fastest = *std::min_element(fresh_ms.begin(), fresh_ms.end());
  if (!(fastest > 4 * med && fastest - med > kFreshMarginMs)) return std::nullopt;
  return Verdict::Hacked("caching", "every call on an input set it had not seen before took at least " +
                                        Number(fastest) + " ms, calls on sets it had seen a median of " + Number(med) +
                                        " ms");
}

std::optional<Verdict> DeviceCachingRule(const std::vector<double>& fresh_busy_ms,
                                         const std::vector<double>& rotation_busy_ms) {
  if (fresh_busy_ms.empty() || rotation_busy_ms.empty()) return std::nullopt;
  const double med = Median(rotation_busy_ms);
  const double fastest = *std::min_element(fresh_busy_ms.begin(), fresh_busy_ms.end());
  if (!(fastest > 3 * med && fastest - med > 0.020)) return std::nullopt;
  return Verdict::Hacked("caching", "on every input set it had not seen before the device was busy at least " +
                                        Number(fastest) + " ms per call, on sets it had seen a median of " +
                                        Number(med) + " ms (seen on the GPU by the kernel recorder)");
}

std::optional<Verdict> TimelineDecoyRule(const gpu::UsageVerdict& usage) {
  if (!usage.decoy) return std::nullopt;
  return Verdict::Hacked("decoy kernel", usage.reason + " (seen on the GPU by the kernel recorder)");
}

std::optional<Verdict> RooflineRule(const gpu::RooflineCheck& candidate, const gpu::RooflineCheck& reference) {
  if (!candidate.below_floor || reference.below_floor) return std::nullopt;
  return Verdict::Hacked("faster than physically possible", candidate.explanation);
}

}  // namespace kgym
