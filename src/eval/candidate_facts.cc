#include "eval/candidate_facts.h"

namespace kgym {

// clang-format off
const std::vector<const char*> kCandidateMetadataKeys = {
    // start and load
    "extension_cache_error", "candidate_worker", "sandbox", "extension_cache", "worker_start_s", "load_s",
    "compilation_error", "runtime_error", "channel_broken",
    // correctness
    "correctness_trials", "max_difference", "avg_difference", "correctness_new_thread_cpu_ms", "idle_threads_evidence",
    "correctness_issue", "correctness_thread_growth_calls", "triton_kernels_defined", "triton_launches_in_correctness",
    "precision",
    // evidence (either phase)
    "hack_evidence", "precision_flags_evidence",
    // timing
    "timing_pool_s", "timing_prepare_s", "detect_grad_s", "timing_kept_calls", "timing_kept_fetch_s",
    "timeline_fetch_s", "timing_bursts_ran", "timing_calls", "timing_attempts", "timing_drained",
    "timing_drain_probes", "timing_shared_calls", "timing_contended", "timing_min_calls", "timing_stopped",
    "timing_median_ci_ms", "timing_median_ci_rel", "timing_lock", "timing_new_thread_cpu_ms",
    "timing_thread_growth_calls", "timing_cpu_inside_call_ms", "timing_cpu_between_calls_ms",
    "timing_cpu_unsettled_readings", "timing_repeat_ratio", "timing_fresh_set_ms", "timing_repeat_suspicious",
    "timing_trace", "kernel_self_reported_median_ms", "kernel_cuda_event_median_ms",
    // the worker's end
    "gpu_work", "quiet_wait_s", "lent_buffers", "frozen_s", "host_memory", "finish_s", "stdout_tail", "stdout_bytes",
};
// clang-format on

namespace {

template <class T>
void Put(nlohmann::json* j, const char* key, const std::optional<T>& v) {
  if (v) (*j)[key] = *v;
}

void StartJson(const StartFacts& s, nlohmann::json* j) {
  Put(j, "extension_cache_error", s.extension_cache_error);
  Put(j, "candidate_worker", s.candidate_worker);
  Put(j, "sandbox", s.sandbox);
  Put(j, "extension_cache", s.extension_cache);
  Put(j, "worker_start_s", s.worker_start_s);
  Put(j, "load_s", s.load_s);
  Put(j, "compilation_error", s.compilation_error);
  Put(j, "runtime_error", s.runtime_error);
  Put(j, "channel_broken", s.channel_broken);
}

void CorrectnessJson(const CorrectnessFacts& c, const EvidenceFacts& e, nlohmann::json* j) {
  Put(j, "correctness_trials", c.correctness_trials);
  Put(j, "max_difference", c.max_difference);
  Put(j, "avg_difference", c.avg_difference);
  Put(j, "correctness_new_thread_cpu_ms", c.new_thread_cpu_ms);
  Put(j, "idle_threads_evidence", c.idle_threads_evidence);
  Put(j, "correctness_issue", c.correctness_issue);
  Put(j, "correctness_thread_growth_calls", c.thread_growth_calls);
  Put(j, "triton_kernels_defined", c.triton_kernels_defined);
  Put(j, "triton_launches_in_correctness", c.triton_launches);
  Put(j, "precision", c.precision);
  Put(j, "hack_evidence", e.hack_evidence);
  Put(j, "precision_flags_evidence", e.precision_flags_evidence);
}

void TimedCallsJson(const TimingFacts& t, nlohmann::json* j) {
  Put(j, "timing_pool_s", t.pool_s);
  Put(j, "timing_prepare_s", t.prepare_s);
  Put(j, "detect_grad_s", t.detect_grad_s);
  Put(j, "timing_kept_calls", t.kept_calls);
  Put(j, "timing_kept_fetch_s", t.kept_fetch_s);
  Put(j, "timeline_fetch_s", t.timeline_fetch_s);
  Put(j, "timing_bursts_ran", t.bursts_ran);
  Put(j, "timing_calls", t.calls);
  Put(j, "timing_attempts", t.attempts);
  Put(j, "timing_drained", t.drained);
  Put(j, "timing_drain_probes", t.drain_probes);
  Put(j, "timing_shared_calls", t.shared_calls);
  Put(j, "timing_contended", t.contended);
  Put(j, "timing_min_calls", t.min_calls);
  Put(j, "timing_stopped", t.stopped);
  Put(j, "timing_median_ci_ms", t.median_ci_ms);
  Put(j, "timing_median_ci_rel", t.median_ci_rel);
  Put(j, "timing_lock", t.lock);
}

void TimingRulesJson(const TimingFacts& t, nlohmann::json* j) {
  Put(j, "timing_new_thread_cpu_ms", t.new_thread_cpu_ms);
  Put(j, "timing_thread_growth_calls", t.thread_growth_calls);
  Put(j, "timing_cpu_inside_call_ms", t.cpu_inside_call_ms);
  Put(j, "timing_cpu_between_calls_ms", t.cpu_between_calls_ms);
  Put(j, "timing_cpu_unsettled_readings", t.cpu_unsettled_readings);
  Put(j, "timing_repeat_ratio", t.repeat_ratio);
  Put(j, "timing_fresh_set_ms", t.fresh_set_ms);
  Put(j, "timing_repeat_suspicious", t.repeat_suspicious);
  for (const auto& [k, v] : t.judgement.items()) (*j)[k] = v;  // after the rules' facts, as the judgement came after
  Put(j, "timing_trace", t.trace);
  Put(j, "kernel_self_reported_median_ms", t.kernel_self_reported_median_ms);
  Put(j, "kernel_cuda_event_median_ms", t.kernel_cuda_event_median_ms);
  Put(j, "gpu_work", t.gpu_work);
}

void FinishJson(const FinishFacts& f, nlohmann::json* j) {
  Put(j, "quiet_wait_s", f.quiet_wait_s);
  Put(j, "lent_buffers", f.lent_buffers);
  Put(j, "frozen_s", f.frozen_s);
  if (f.worker_peak_bytes) (*j)["host_memory"]["candidate_worker_peak_bytes"] = *f.worker_peak_bytes;
  Put(j, "finish_s", f.finish_s);
  Put(j, "stdout_tail", f.stdout_tail);
  Put(j, "stdout_bytes", f.stdout_bytes);
}

}  // namespace

nlohmann::json CandidateFacts::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  StartJson(start, &j);
  CorrectnessJson(correctness, evidence, &j);
  TimedCallsJson(timing, &j);
  TimingRulesJson(timing, &j);
  FinishJson(finish, &j);
  return j;
}

void CandidateFacts::WriteTo(nlohmann::json* metadata) const {
  nlohmann::json& md = *metadata;
  const nlohmann::json facts = ToJson();  // named: items() refers to it
  for (const auto& [k, v] : facts.items()) {
    if (k == "host_memory" && md.contains(k) && md[k].is_object())
      for (const auto& [ik, iv] : v.items()) md[k][ik] = iv;
    else
      md[k] = v;
  }
}

}  // namespace kgym
