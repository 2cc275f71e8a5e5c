#include "core/kernelgym_schema.h"

#include <chrono>
#include <ctime>
#include <set>

namespace kgym::kernelgym {

namespace {
using nlohmann::json;

// The keys KernelGYM's result metadata can hold (research/kernelgym.md §4.2), whichever subtask wrote them.
const std::set<std::string>& MetadataKeys() {
  static const std::set<std::string> keys = {
      "hardware", "device", "gpu_name", "backend", "num_correct_trials", "num_perf_trials", "kernel_task_id",
      "reference_task_id",
      // compile and load
      "compilation_error", "compilation_error_name", "validation_error", "error",
      // runtime and correctness
      "runtime_error", "runtime_error_name", "correctness_issue", "correctness_issue_name", "max_difference",
      "avg_difference", "correctness_trials", "correctness_skipped",
      // Triton detection and profiling coverage (the reward client's inputs)
      "triton_profiler_matches", "profiling", "num_custom_kernels", "num_total_kernels", "triton_kernel_coverage",
      "total_kernel_run_time_in_profiling_us", "custom_kernel_cuda_time_in_profiling_us",
      "custom_kernel_cuda_time_coverage", "error_during_performance",
      // reference side
      "model_load_error", "model_load_error_name",
      // kernel_simple
      "cases_source", "num_cases", "correctness_failed_cases", "runtime_stats", "performance_skipped"};
  return keys;
}

json NullIfEmpty(const std::string& s) { return s.empty() ? json() : json(s); }

// kgym's own sentence about the evaluation.
std::string Reason(const EvalResult& r) { return r.error_message.empty() ? r.outcome_detail : r.error_message; }

bool Validation(const EvalResult& r) { return r.error_code == "VALIDATION_ERROR"; }

// KernelGYM's failed-result path (timeouts, dead workers, a reference or system failure): nothing about the
// candidate is known, so compiled is false and the runtimes are its -1 sentinels.
bool FailedResultPath(const EvalResult& r) {
  switch (r.outcome) {
    case Outcome::kTimeout:
    case Outcome::kCrashed:
    case Outcome::kInvalid:
      return true;
    case Outcome::kResourceExhausted:
      return !r.compiled;
    default:
      return false;
  }
}

// error_message as KernelGYM words it, continued with kgym's reason.
std::string Message(const EvalResult& r) {
  const std::string why = Reason(r);
  auto with = [&](const std::string& prefix) { return why.empty() ? prefix : prefix + ": " + why; };
  switch (r.outcome) {
    case Outcome::kCorrect:
      return "";
    case Outcome::kCompileError:
      return Validation(r) ? why : with("Kernel compilation failed");
    case Outcome::kRuntimeError:
      return with("Kernel execution failed");
    case Outcome::kIncorrect:
    case Outcome::kHacked:
      return with("Kernel produced incorrect results");
    case Outcome::kResourceExhausted:
      return with(r.compiled ? "Kernel execution failed" : "Task processing failed");
    case Outcome::kTimeout:
    case Outcome::kCrashed:
      return with("Task processing failed");
    case Outcome::kInvalid:
      return why;
  }
  return why;
}

json Metadata(const EvalResult& r, const std::string& message) {
  json md = json::object();
  if (r.metadata.is_object())
    for (auto it = r.metadata.begin(); it != r.metadata.end(); ++it)
      if (MetadataKeys().count(it.key())) md[it.key()] = it.value();
  if (FailedResultPath(r) || Validation(r)) md["error"] = message;
  return md;
}
}  // namespace

const std::vector<std::string>& ResponseKeys() {
  static const std::vector<std::string> keys = {
      "task_id", "status",   "compiled",      "correctness", "decoy_kernel", "reference_runtime", "kernel_runtime",
      "speedup", "metadata", "error_message", "error_code",  "submitted_at", "completed_at",      "processing_time"};
  return keys;
}

bool IsCancelled(const EvalResult& r) {
  return r.outcome == Outcome::kInvalid && r.outcome_detail.rfind("cancelled", 0) == 0;
}

std::string TaskStatus(const EvalResult& r) {
  switch (r.outcome) {
    case Outcome::kCorrect:
    case Outcome::kIncorrect:
    case Outcome::kRuntimeError:
    case Outcome::kHacked:
      return "completed";
    case Outcome::kResourceExhausted:
      return r.compiled ? "completed" : "failed";
    case Outcome::kCompileError:
    case Outcome::kTimeout:
    case Outcome::kCrashed:
    case Outcome::kInvalid:
      return "failed";
  }
  return "failed";
}

json Timestamp(double unix_seconds) {
  if (unix_seconds <= 0) return nullptr;
  const auto tp = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(unix_seconds)));
  std::time_t t = std::chrono::system_clock::to_time_t(tp);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count() % 1000000;
  std::tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%06ldZ", buf, static_cast<long>(us));
  return out;
}

json EvaluationResponse(const EvalResult& r, const JobTimes& times) {
  json j;
  j["task_id"] = r.task_id;
  j["status"] = TaskStatus(r);
  const json processing =
      times.submitted > 0 && times.finished >= times.submitted ? json(times.finished - times.submitted) : json();
  if (IsCancelled(r)) {  // KernelGYM's fail_task record: only the error survives
    for (const auto& k : ResponseKeys())
      if (!j.contains(k)) j[k] = nullptr;
    j["error_message"] = "Task cancelled";
    j["error_code"] = "SYSTEM_ERROR";
    j["submitted_at"] = Timestamp(times.submitted);
    j["completed_at"] = Timestamp(times.finished);
    j["processing_time"] = processing;
    return j;
  }
  const bool failed_path = FailedResultPath(r);
  const std::string message = Message(r);
  j["compiled"] = failed_path ? false : r.compiled;
  j["correctness"] = failed_path ? false : r.correctness;
  j["decoy_kernel"] = r.decoy_kernel;
  j["reference_runtime"] = failed_path ? -1.0 : r.reference_runtime;
  j["kernel_runtime"] = failed_path ? -1.0 : r.kernel_runtime;
  j["speedup"] = r.correctness ? r.speedup : 0.0;
  j["metadata"] = Metadata(r, message);
  j["error_message"] = NullIfEmpty(message);
  j["error_code"] = NullIfEmpty(r.outcome == Outcome::kCorrect ? "" : r.error_code);
  j["submitted_at"] = Timestamp(times.submitted);
  j["completed_at"] = r.completed_at.empty() ? Timestamp(times.finished) : json(r.completed_at);
  j["processing_time"] = processing;
  return j;
}

std::string SimpleStatus(const EvalResult& r) {
  // KernelGYM's kernel_simple toolkit: failed whenever the kernel did not compile or raised; a mismatch is a
  // completed evaluation with correctness false.
  switch (r.outcome) {
    case Outcome::kCorrect:
    case Outcome::kIncorrect:
    case Outcome::kHacked:
      return "completed";
    default:
      return "failed";
  }
}

json SimpleResult(const EvalResult& r, bool correctness_checked, const JobTimes& times) {
  json full = EvaluationResponse(r, times);
  json j;
  j["task_id"] = r.task_id;
  j["base_task_id"] = r.task_id;
  j["compiled"] = full["compiled"];
  j["correctness"] = correctness_checked || !r.correctness ? full["correctness"] : json();
  j["decoy_kernel"] = full["decoy_kernel"];
  j["kernel_runtime"] = full["kernel_runtime"];
  j["metadata"] = full["metadata"];
  if (!correctness_checked && j["metadata"].is_object()) j["metadata"]["correctness_skipped"] = "no_expected_outputs";
  j["error_message"] = full["error_message"];
  j["error_code"] = full["error_code"];
  j["completed_at"] = full["completed_at"];
  return j;
}

}  // namespace kgym::kernelgym
