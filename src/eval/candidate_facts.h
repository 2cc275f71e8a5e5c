// What a candidate's run found, as types: the facts of its start and load, its correctness trials and their rules, its
// timed calls and their judgement, and its worker's end. The run (eval/candidate_run.cc, candidate_correctness.cc)
// fills them; CandidateFacts::ToJson is the one writer of their metadata keys (kCandidateMetadataKeys lists them once;
// tests/py/test_code_shape.py fails on any of them written elsewhere). A fact that did not happen (a phase that did not
// run, a rule that did not look) is absent, and so is its key.
//
// What other rooms act on is not read back from this metadata: the evaluator's rerun of a broken channel and memory
// admission's worker peak are EvalResult::signals (core/evaluation.h), set beside the facts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kgym {

// The worker's start and the candidate's load.
struct StartFacts {
  std::optional<double> worker_start_s;              // the worker (spare or fresh) until its hello
  std::optional<std::string> candidate_worker;       // how it came: fresh | spare | spare_waited
  std::optional<std::string> extension_cache_error;  // CUDA backend: the build cache could not be made
  std::optional<nlohmann::json> sandbox;             // the protections the worker's hello reported
  std::optional<std::string> extension_cache;        // hit | miss | off
  std::optional<nlohmann::json> load_s;              // the worker's own note of its load
  std::optional<std::string> compilation_error;      // a compile error's text (HarnessErrorVerdict)
  std::optional<std::string> runtime_error;          // a runtime error's traceback
  std::optional<std::string> channel_broken;         // the channel broke as tampering does (also a signal)
};

// The correctness trials and the rules over them.
struct CorrectnessFacts {
  std::optional<std::string> correctness_trials;                 // "(passed / compared)"
  std::optional<nlohmann::json> max_difference, avg_difference;  // the trial that compared wrong
  std::optional<nlohmann::json> new_thread_cpu_ms;               // per watched call
  std::optional<nlohmann::json> idle_threads_evidence;           // thread injection the outside watch showed idle
  std::optional<std::string> correctness_issue;
  std::optional<int> thread_growth_calls;
  std::optional<std::vector<std::string>> triton_kernels_defined;
  std::optional<int64_t> triton_launches;
  std::optional<nlohmann::json> precision;  // the precision class against the fp64 oracle, and the policy
};

// The timed calls, and the rules and judgement over them.
struct TimingFacts {
  std::optional<double> pool_s, prepare_s, timeline_fetch_s;
  std::optional<int> kept_calls;
  std::optional<double> kept_fetch_s;
  std::optional<size_t> calls;
  std::optional<int> attempts;  // exclusive device time (eval/contention.h), where drains are awaited
  std::optional<bool> drained;
  std::optional<int> drain_probes;
  std::optional<int> shared_calls;
  std::optional<bool> contended;
  std::optional<int> min_calls;        // adaptive trials (eval/adaptive_trials.h)
  std::optional<std::string> stopped;  // interval | ceiling
  std::optional<std::vector<double>> median_ci_ms;
  std::optional<double> median_ci_rel;
  std::optional<nlohmann::json> lock;  // the device's timing lock (LockUse)
  std::optional<double> detect_grad_s;
  std::optional<bool> bursts_ran;
  std::optional<nlohmann::json> new_thread_cpu_ms;
  std::optional<int> thread_growth_calls;
  std::optional<double> cpu_inside_call_ms, cpu_between_calls_ms;
  std::optional<int> cpu_unsettled_readings;
  std::optional<double> repeat_ratio;
  std::optional<std::vector<double>> fresh_set_ms;
  std::optional<bool> repeat_suspicious;
  nlohmann::json judgement = nlohmann::json::object();  // the GPU judgement's own keys (eval/gpu_timing.h)
  std::optional<nlohmann::json> trace;                  // KGYM_TIMING_TRACE
  std::optional<double> kernel_self_reported_median_ms, kernel_cuda_event_median_ms;
  std::optional<nlohmann::json> gpu_work;  // eval/account.h
};

// In-process evidence, from either phase's rules.
struct EvidenceFacts {
  std::optional<nlohmann::json> hack_evidence;             // what the in-process evidence rule judged
  std::optional<nlohmann::json> precision_flags_evidence;  // compat: a changed backend flag, set aside
};

// The worker's end.
struct FinishFacts {
  std::optional<double> quiet_wait_s;
  std::optional<nlohmann::json> lent_buffers;  // {bytes, made, used}
  std::optional<double> frozen_s;
  std::optional<uint64_t> worker_peak_bytes;  // metadata host_memory.candidate_worker_peak_bytes (also a signal)
  std::optional<double> finish_s;
  std::optional<std::string> stdout_tail;
  std::optional<uint64_t> stdout_bytes;
};

struct CandidateFacts {
  StartFacts start;
  CorrectnessFacts correctness;
  TimingFacts timing;
  EvidenceFacts evidence;
  FinishFacts finish;

  // The facts as metadata keys (those in kCandidateMetadataKeys, and the judgement's own), in the order the run found
  // them: a later fact of the same key wins.
  nlohmann::json ToJson() const;
  // Writes ToJson() into a result's metadata; host_memory.candidate_worker_peak_bytes joins the evaluator's
  // host_memory object.
  void WriteTo(nlohmann::json* metadata) const;
};

// Every metadata key CandidateFacts::ToJson writes, once.
extern const std::vector<const char*> kCandidateMetadataKeys;

}  // namespace kgym
