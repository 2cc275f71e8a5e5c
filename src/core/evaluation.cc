#include "core/evaluation.h"

#include "core/kernelgym_schema.h"

namespace kgym {

namespace {
struct OutcomeNameEntry {
  Outcome o;
  const char* name;
};
constexpr OutcomeNameEntry kOutcomeNames[] = {
    {Outcome::kCorrect, "correct"},
    {Outcome::kIncorrect, "incorrect"},
    {Outcome::kCompileError, "compile_error"},
    {Outcome::kRuntimeError, "runtime_error"},
    {Outcome::kTimeout, "timeout"},
    {Outcome::kCrashed, "crashed"},
    {Outcome::kResourceExhausted, "resource_exhausted"},
    {Outcome::kHacked, "hacked"},
    {Outcome::kInvalid, "invalid"},
};

nlohmann::json StatsJson(const TimingStats& s) {
  return {{"n", s.n},        {"median_ms", s.median}, {"mean_ms", s.mean},         {"min_ms", s.min},
          {"max_ms", s.max}, {"stddev_ms", s.stddev}, {"samples_ms", s.samples_ms}};
}

TimingStats StatsFromJson(const nlohmann::json& j) {
  TimingStats s;
  s.n = j.value("n", 0);
  s.median = j.value("median_ms", -1.0);
  s.mean = j.value("mean_ms", -1.0);
  s.min = j.value("min_ms", -1.0);
  s.max = j.value("max_ms", -1.0);
  s.stddev = j.value("stddev_ms", -1.0);
  if (j.contains("samples_ms")) s.samples_ms = j["samples_ms"].get<std::vector<double>>();
  return s;
}

nlohmann::json NullIfEmpty(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }
}  // namespace

const char* OutcomeName(Outcome o) {
  for (const auto& e : kOutcomeNames)
    if (e.o == o) return e.name;
  return "invalid";
}

std::optional<Outcome> OutcomeFromName(const std::string& name) {
  for (const auto& e : kOutcomeNames)
    if (name == e.name) return e.o;
  return std::nullopt;
}

const char* ErrorCodeFor(Outcome o) {
  switch (o) {
    case Outcome::kCorrect:
      return "";
    case Outcome::kIncorrect:
      return "CORRECTNESS_ERROR";
    case Outcome::kCompileError:
      return "COMPILATION_ERROR";
    case Outcome::kRuntimeError:
      return "RUNTIME_ERROR";
    case Outcome::kTimeout:
      return "TIMEOUT_ERROR";
    case Outcome::kCrashed:
      return "RUNTIME_ERROR";
    case Outcome::kResourceExhausted:
      return "RESOURCE_ERROR";
    case Outcome::kHacked:
      return "CORRECTNESS_ERROR";
    case Outcome::kInvalid:
      return "VALIDATION_ERROR";
  }
  return "UNKNOWN_ERROR";
}

std::string EvalResult::Status(bool compat) const {
  if (compat) return kernelgym::TaskStatus(*this);
  return outcome == Outcome::kInvalid ? "failed" : "completed";
}

nlohmann::json EvalResult::ToJson(bool compat) const {
  nlohmann::json j;
  j["task_id"] = task_id;
  j["status"] = Status(compat);
  j["compiled"] = compiled;
  j["correctness"] = correctness;
  j["decoy_kernel"] = decoy_kernel;
  j["reference_runtime"] = reference_runtime;
  j["kernel_runtime"] = kernel_runtime;
  j["speedup"] = speedup;
  j["metadata"] = metadata;
  j["error_message"] = NullIfEmpty(error_message);
  j["error_code"] = NullIfEmpty(error_code);
  j["submitted_at"] = nullptr;
  j["completed_at"] = NullIfEmpty(completed_at);
  j["processing_time"] = nullptr;
  j["outcome"] = OutcomeName(outcome);
  j["outcome_detail"] = outcome_detail;
  nlohmann::json timing = nlohmann::json::object();
  if (reference_timing) timing["reference"] = StatsJson(*reference_timing);
  if (kernel_timing) timing["kernel"] = StatsJson(*kernel_timing);
  j["timing"] = timing;
  j["correctness_detail"] = correctness_detail;
  return j;
}

EvalResult EvalResult::FromJson(const nlohmann::json& j) {
  EvalResult r;
  r.task_id = j.value("task_id", "");
  auto o = OutcomeFromName(j.value("outcome", "invalid"));
  r.outcome = o.value_or(Outcome::kInvalid);
  r.outcome_detail = j.value("outcome_detail", "");
  r.compiled = j.value("compiled", false);
  r.correctness = j.value("correctness", false);
  r.decoy_kernel = j.value("decoy_kernel", false);
  r.reference_runtime = j.value("reference_runtime", -1.0);
  r.kernel_runtime = j.value("kernel_runtime", -1.0);
  r.speedup = j.value("speedup", 0.0);
  if (j.contains("metadata") && j["metadata"].is_object()) r.metadata = j["metadata"];
  if (j.contains("error_message") && j["error_message"].is_string()) r.error_message = j["error_message"];
  if (j.contains("error_code") && j["error_code"].is_string()) r.error_code = j["error_code"];
  if (j.contains("completed_at") && j["completed_at"].is_string()) r.completed_at = j["completed_at"];
  if (j.contains("timing")) {
    const auto& t = j["timing"];
    if (t.contains("reference")) r.reference_timing = StatsFromJson(t["reference"]);
    if (t.contains("kernel")) r.kernel_timing = StatsFromJson(t["kernel"]);
  }
  if (j.contains("correctness_detail")) r.correctness_detail = j["correctness_detail"];
  return r;
}

std::string HackFamily(const std::string& detail) {
  static const std::string kPrefix = "hacked (";
  if (detail.rfind(kPrefix, 0) != 0) return "";
  size_t end = detail.find(')', kPrefix.size());
  return end == std::string::npos ? "" : detail.substr(kPrefix.size(), end - kPrefix.size());
}

}  // namespace kgym
