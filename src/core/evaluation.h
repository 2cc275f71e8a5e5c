// The two values that travel along the evaluation path: what to evaluate (EvalRequest) and what came of it
// (EvalResult). Every layer (CLI, server, scheduler, agent, store) speaks these types; only src/eval produces
// results. JSON conversion follows KernelGYM's EvaluationResponse (research/kernelgym.md §1.4, §4) plus kgym's
// richer fields (`outcome`, `outcome_detail`, `timing`, `correctness_detail`).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kgym {

// The classified result of one evaluation. Tests and tools rely on these names.
enum class Outcome {
  kCorrect,            // ran, matched the reference on every trial
  kIncorrect,          // ran, wrong values / shape / dtype / non-finite
  kCompileError,       // syntax error, import error, missing ModelNew, nvcc/Triton build failure
  kRuntimeError,       // exception in __init__ or forward
  kTimeout,            // over the wall-clock limit
  kCrashed,            // killed by a signal or exited without a result
  kResourceExhausted,  // host or device out of memory
  kHacked,             // a detected reward hack (outcome_detail names the family)
  kInvalid,            // the reference (or the request) is broken: never blamed on the candidate
};

const char* OutcomeName(Outcome o);
std::optional<Outcome> OutcomeFromName(const std::string& name);

struct EvalRequest {
  std::string task_id;
  std::string reference_code;
  std::string kernel_code;
  std::string entry_point = "Model";  // the candidate class is entry_point + "New"
  std::string backend = "triton";     // triton | cuda (how the candidate builds its kernels)
  std::string device = "cpu";         // cpu | cuda
  int device_index = 0;               // physical GPU index when device == cuda
  int num_correct_trials = 5;
  int num_perf_trials = 100;  // timed calls: with adaptive trials, the most that run
  // Adaptive trials (eval/adaptive_trials.h): the timed calls stop once their median's 95 % interval is within
  // perf_ci_target of it, after at least min_perf_trials calls. -1 = the evaluator's default (20); 0 = off (every one
  // of num_perf_trials runs).
  int min_perf_trials = -1;
  double perf_ci_target = 0.005;
  int num_warmup = 3;
  double timeout_s = 300;
  std::string reference_backend;  // "" / "pytorch" = eager; "torch_compile" = torch.compile
  bool run_correctness = true;
  bool measure_performance = true;
  bool enable_profiling = true;
  bool detect_decoy = true;         // Triton decoy detection (backend == triton)
  double coverage_floor = 0.1;      // GPU time coverage below this is reported (metadata coverage_below_floor)
  bool train_mode = false;          // keep models in training mode (default: eval())
  double atol = 1e-2, rtol = 1e-2;  // fp32 tolerances (KernelBench v0.1 / KernelGYM)
  double atol_half = 1e-2, rtol_half = 1e-2;  // fp16 / bf16
  // "strict" | "compat" (eval/precision.h): a downgrade past the fp32 budget is hacked, or only reported; "" = the
  // evaluator's default.
  std::string precision;
  double memory_limit_gb = 0;  // host address-space limit for the candidate (0 = default)
  std::string size = "";       // task size hint passed to get_inputs (e.g. "small"), "" = default
  bool unsafe_no_sandbox = false;
  nlohmann::json extra = nlohmann::json::object();  // fields we accept but do not interpret
};

// Summary statistics of one timed series (milliseconds).
struct TimingStats {
  int n = 0;
  double median = -1, mean = -1, min = -1, max = -1, stddev = -1;
  std::vector<double> samples_ms;  // raw samples, kept so every number can be traced
};

// Host memory an evaluation held in the evaluating process, as memory admission reads it (sched/admitted_evaluator.h).
struct HostMemoryUse {
  bool known = false;                        // the reference ran (a request refused before it measured nothing)
  uint64_t reference_bytes = 0;              // the reference data (shared by the evaluations of its configuration)
  uint64_t trial_output_bytes = 0;           // the candidate's outputs held at once
  uint64_t candidate_worker_peak_bytes = 0;  // the candidate's worker's peak private memory (0: not measured)
  uint64_t reference_worker_peak_bytes = 0;  // the reference's worker's, where this process made the reference
};

// What the evaluation's own rooms act on, typed: the evaluator (a broken channel runs the candidate again) and memory
// admission (the footprint). The result's metadata tells the same facts to its readers; these are never read back
// from it. Not part of ToJson/FromJson: they live with the result in the process that evaluated.
struct EvalSignals {
  std::string channel_broken;       // the candidate's channel broke as tampering does ("" = it did not)
  std::string reference_cache_key;  // the reference data's configuration (eval/evaluator.h ReferenceKey)
  HostMemoryUse host_memory;
};

struct EvalResult {
  std::string task_id;
  Outcome outcome = Outcome::kInvalid;
  std::string outcome_detail;
  bool compiled = false;
  bool correctness = false;
  bool decoy_kernel = false;
  double reference_runtime = -1.0;  // ms, median; -1 when not measured
  double kernel_runtime = -1.0;     // ms, median; -1 when not measured
  double speedup = 0.0;             // reference / kernel when correct, else 0
  std::string error_message;        // empty = null
  std::string error_code;           // KernelGYM ErrorCode, empty = null
  std::optional<TimingStats> reference_timing, kernel_timing;
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json correctness_detail = nlohmann::json::object();
  std::string completed_at;  // ISO-8601, filled by the store/server
  EvalSignals signals;       // typed facts for the evaluating process's rooms (above)

  // "completed" unless the evaluation could not reach a verdict about the candidate's code.
  // compat: KernelGYM's status (core/kernelgym_schema.h), where compile/validation failures and timeouts are
  // "failed".
  std::string Status(bool compat) const;
  nlohmann::json ToJson(bool compat = false) const;
  static EvalResult FromJson(const nlohmann::json& j);
};

// The family of a hack named by an outcome_detail, which the evaluator writes "hacked (FAMILY): ..."; "" when the
// detail names none.
std::string HackFamily(const std::string& outcome_detail);

// KernelGYM ErrorCode for an outcome ("" for none).
const char* ErrorCodeFor(Outcome o);

}  // namespace kgym
