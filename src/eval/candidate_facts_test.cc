#include "eval/candidate_facts.h"

#include <gtest/gtest.h>

#include <set>

namespace kgym {
namespace {

// Every fact set: its metadata keys are exactly the listed ones, each once.
CandidateFacts AllFacts() {
  CandidateFacts f;
  StartFacts& s = f.start;
  s.worker_start_s = 0.5, s.candidate_worker = "spare", s.extension_cache_error = "e", s.sandbox = nlohmann::json{};
  s.extension_cache = "hit", s.load_s = 1.0, s.compilation_error = "c", s.runtime_error = "r", s.channel_broken = "x";
  CorrectnessFacts& c = f.correctness;
  c.correctness_trials = "(2 / 2)", c.max_difference = c.avg_difference = nlohmann::json::array({1.0});
  c.new_thread_cpu_ms = nlohmann::json::array(), c.idle_threads_evidence = nlohmann::json::array();
  c.correctness_issue = "i", c.thread_growth_calls = 0, c.triton_kernels_defined = std::vector<std::string>{"k"};
  c.triton_launches = 3, c.precision = nlohmann::json::object();
  f.evidence.hack_evidence = f.evidence.precision_flags_evidence = nlohmann::json::array();
  TimingFacts& t = f.timing;
  t.pool_s = t.prepare_s = t.timeline_fetch_s = t.kept_fetch_s = t.detect_grad_s = 0.1;
  t.kept_calls = t.attempts = t.drain_probes = t.shared_calls = t.min_calls = t.thread_growth_calls = 1;
  t.cpu_unsettled_readings = 1, t.calls = size_t{5},
  t.drained = t.contended = t.bursts_ran = t.repeat_suspicious = true;
  t.stopped = "interval", t.median_ci_ms = std::vector<double>{1, 2}, t.median_ci_rel = 0.1;
  t.lock = t.new_thread_cpu_ms = t.trace = t.gpu_work = nlohmann::json::object();
  t.cpu_inside_call_ms = t.cpu_between_calls_ms = t.repeat_ratio = 1.0, t.fresh_set_ms = std::vector<double>{1};
  t.kernel_self_reported_median_ms = t.kernel_cuda_event_median_ms = 2.0;
  FinishFacts& e = f.finish;
  e.quiet_wait_s = e.frozen_s = e.finish_s = 0.2, e.lent_buffers = nlohmann::json::object();
  e.worker_peak_bytes = 100, e.stdout_tail = "out", e.stdout_bytes = 3;
  return f;
}

TEST(CandidateFacts, ToJsonWritesExactlyTheListedKeys) {
  std::set<std::string> listed(kCandidateMetadataKeys.begin(), kCandidateMetadataKeys.end());
  EXPECT_EQ(listed.size(), kCandidateMetadataKeys.size());  // each once
  std::set<std::string> written;
  const nlohmann::json all = AllFacts().ToJson();  // named: items() refers to it
  for (const auto& [k, v] : all.items()) written.insert(k);
  EXPECT_EQ(written, listed);
  EXPECT_TRUE(CandidateFacts{}.ToJson().empty());  // a fact that did not happen has no key
}

TEST(CandidateFacts, TheWorkerPeakJoinsTheEvaluatorsHostMemoryAndTheJudgementComesAfterTheRules) {
  nlohmann::json md = {{"host_memory", {{"reference_bytes", 10}}}, {"device", "cpu"}};
  CandidateFacts f;
  f.finish.worker_peak_bytes = 7;
  f.timing.repeat_ratio = 0.9;
  f.timing.judgement = {{"timing_source", "timeline"}, {"timing_repeat_ratio", 0.5}};
  f.WriteTo(&md);
  EXPECT_EQ(md["host_memory"], nlohmann::json({{"reference_bytes", 10}, {"candidate_worker_peak_bytes", 7}}));
  EXPECT_EQ(md["device"], "cpu");
  EXPECT_EQ(md["timing_source"], "timeline");
  EXPECT_EQ(md["timing_repeat_ratio"], 0.5);
}

}  // namespace
}  // namespace kgym
