#include "server/request_parse.h"

#include <chrono>
#include <cmath>
#include <set>

#include "core/kernelgym_schema.h"
#include "request/request_fields.h"
#include "server/kernel_simple.h"

namespace kgym {

namespace {
using nlohmann::json;

// Collects pydantic-style error entries.
struct Errors {
  json list = json::array();
  void Add(const std::string& field, const std::string& msg, const std::string& type) {
    list.push_back({{"loc", {"body", field}}, {"msg", msg}, {"type", type}});
  }
};

std::string Strip(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n\f\v");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n\f\v");
  return s.substr(b, e - b + 1);
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsNull(const json& b, const char* k) { return !b.contains(k) || b[k].is_null(); }

// Optional string field: absent/null -> nullopt.
std::optional<std::string> OptString(const json& b, const char* k, Errors* e) {
  if (IsNull(b, k)) return std::nullopt;
  if (!b[k].is_string()) {
    e->Add(k, "Input should be a valid string", "string_type");
    return std::nullopt;
  }
  return b[k].get<std::string>();
}

std::optional<bool> OptBool(const json& b, const char* k, Errors* e) {
  if (IsNull(b, k)) return std::nullopt;
  const json& v = b[k];
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) return v.get<int64_t>() == 1;
  if (v.is_string()) {
    std::string s = Lower(v.get<std::string>());
    if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  }
  e->Add(k, "Input should be a valid boolean", "bool_type");
  return std::nullopt;
}

// Reads the request table's field `name` (request/request_fields.h) when the body has it, checked against the
// table's type and limits; a problem is recorded under the field's name. KernelGYM's integer fields refuse null as
// pydantic does; every other field takes null for absent.
void ReadField(const json& b, const char* name, EvalRequest* r, Errors* e) {
  const request::RequestField& f = *request::FindRequestField(name);
  const bool null_is_absent = !(f.kernelgym && f.type == request::FieldType::kInt);
  if (!b.contains(name) || (null_is_absent && b[name].is_null())) return;
  json v;
  if (auto problem = request::CheckJson(f, b[name], &v))
    e->Add(name, problem->msg, problem->type);
  else
    request::Set(f, v, r);
}

void CodeField(const json& b, const char* k, bool required, std::string* out, Errors* e) {
  auto v = OptString(b, k, e);
  if (!v) {
    if (required && IsNull(b, k)) e->Add(k, "Field required", "missing");
    return;
  }
  size_t n = Strip(*v).size();
  if (n < 10)
    e->Add(k, "Code must be at least 10 characters long (after stripping whitespace)", "value_error");
  else if (v->size() > 100000)
    e->Add(k, "Code must be at most 100000 characters long", "value_error");
  else
    *out = *v;
}

EvalResult ValidationFailure(const std::string& task_id, Outcome outcome, const std::string& msg) {
  EvalResult r;
  r.task_id = task_id;
  r.outcome = outcome;
  r.outcome_detail = "validation";
  r.error_code = "VALIDATION_ERROR";
  r.error_message = msg;
  r.metadata = {{"error", msg}};
  return r;
}

const std::set<std::string> kKnownFields = {"task_id",
                                            "reference_code",
                                            "kernel_code",
                                            "toolkit",
                                            "backend_adapter",
                                            "backend",
                                            "num_correct_trials",
                                            "num_perf_trials",
                                            "num_warmup",
                                            "timeout",
                                            "priority",
                                            "device_preference",
                                            "force_refresh",
                                            "entry_point",
                                            "reference_backend",
                                            "uuid",
                                            "use_reference_cache",
                                            "is_valid",
                                            "verbose_errors",
                                            "enable_profiling",
                                            "enable_triton_detection",
                                            "measure_performance",
                                            "run_correctness",
                                            "run_triton_detection",
                                            "run_performance",
                                            "cases_code",
                                            "cases",
                                            "workflow",
                                            "resources",
                                            "deadline_s",
                                            "size",
                                            "coverage_floor",
                                            "precision",
                                            "min_perf_trials",
                                            "perf_ci_target"};
}  // namespace

std::string KernelGymTimestamp() {
  return kernelgym::Timestamp(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::string WorkflowName(const std::string& name) { return Lower(Strip(name.empty() ? "kernelbench" : name)); }

json ValidationErrorBody(const std::string& message) {
  return {{"error", "RequestValidationError"},
          {"message", message},
          {"error_code", "VALIDATION_ERROR"},
          {"task_id", nullptr},
          {"timestamp", KernelGymTimestamp()}};
}

Status ParseEvaluationRequest(const json& b, bool require_task_id, ParsedRequest* out) {
  Errors e;
  if (!b.is_object()) {
    e.Add("__root__", "Input should be a valid dictionary or object", "dict_type");
    return Status::InvalidArgument("Request validation failed: " + e.list.dump());
  }
  ParsedRequest p;
  EvalRequest& r = p.job.request;

  ReadField(b, "task_id", &r, &e);
  if (require_task_id && IsNull(b, "task_id")) e.Add("task_id", "Field required", "missing");

  std::string workflow = WorkflowName(OptString(b, "workflow", &e).value_or("kernelbench"));
  if (workflow != "kernelbench" && workflow != "kernel_simple")
    e.Add("workflow", "workflow must be 'kernelbench' or 'kernel_simple'", "value_error");

  CodeField(b, "reference_code", workflow == "kernelbench", &r.reference_code, &e);
  CodeField(b, "kernel_code", true, &r.kernel_code, &e);

  std::string toolkit = OptString(b, "toolkit", &e).value_or("kernelbench");
  if (toolkit != "kernelbench" && toolkit != "kernel_simple")
    e.Add("toolkit", "Unknown toolkit '" + toolkit + "' (registered: kernelbench, kernel_simple)", "value_error");
  std::string adapter = OptString(b, "backend_adapter", &e).value_or("kernelbench");
  if (adapter != "kernelbench")
    e.Add("backend_adapter", "Unknown backend adapter '" + adapter + "' (registered: kernelbench)", "value_error");
  // What the request asks, as the request table defines it (one limit per field, the same as `kgym eval`'s).
  for (const char* k :
       {"backend", "num_correct_trials", "num_perf_trials", "num_warmup", "timeout", "entry_point", "reference_backend",
        "size", "coverage_floor", "precision", "min_perf_trials", "perf_ci_target"})
    ReadField(b, k, &r, &e);
  if (std::string v = Lower(r.reference_backend); v == "torch_compile" || v == "torch-compile" || v == "compile")
    r.reference_backend = "torch_compile";

  std::string priority = OptString(b, "priority", &e).value_or("normal");
  if (!PriorityFromName(priority, &p.job.priority))
    e.Add("priority", "Input should be 'low', 'normal' or 'high'", "enum");

  if (auto dev = OptString(b, "device_preference", &e)) {
    if (dev->rfind("cuda:", 0) == 0 || *dev == "cpu") p.job.device = *dev;
  }
  p.force_refresh = OptBool(b, "force_refresh", &e).value_or(false);
  auto uuid = OptString(b, "uuid", &e);
  bool use_ref_cache = OptBool(b, "use_reference_cache", &e).value_or(false);
  for (const char* k : {"is_valid", "verbose_errors"}) OptBool(b, k, &e);
  auto enable_profiling = OptBool(b, "enable_profiling", &e);
  auto enable_detection = OptBool(b, "enable_triton_detection", &e);
  auto measure = OptBool(b, "measure_performance", &e);
  auto run_correctness = OptBool(b, "run_correctness", &e);
  auto run_detection = OptBool(b, "run_triton_detection", &e);
  auto run_performance = OptBool(b, "run_performance", &e);
  OptString(b, "cases_code", &e);
  if (!IsNull(b, "cases") && !b["cases"].is_array()) e.Add("cases", "Input should be a valid list", "list_type");
  if (!IsNull(b, "resources") && !b["resources"].is_object())
    e.Add("resources", "Input should be a valid dictionary", "dict_type");
  double deadline_s = 0;
  if (!IsNull(b, "deadline_s")) {
    if (!b["deadline_s"].is_number() || b["deadline_s"].get<double>() <= 0)
      e.Add("deadline_s", "Input should be a positive number of seconds", "greater_than");
    else
      deadline_s = b["deadline_s"].get<double>();
  }

  if (!e.list.empty()) return Status::InvalidArgument("Request validation failed: " + e.list.dump());
  if (workflow == "kernel_simple") return ParseKernelSimplePayload(b, out);

  // KernelGYM's flag resolution (§1.3).
  r.run_correctness = run_correctness.value_or(true);
  r.detect_decoy = run_detection.value_or(enable_detection.value_or(r.backend == "triton"));
  r.measure_performance = run_performance.value_or(measure.value_or(true));
  r.enable_profiling = enable_profiling.value_or(true);
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!kKnownFields.count(it.key()) || it.key() == "uuid" || it.key() == "is_valid" || it.key() == "verbose_errors" ||
        it.key() == "resources" || it.key() == "device_preference")
      r.extra[it.key()] = it.value();
  p.job.id = r.task_id;
  if (deadline_s > 0)
    p.job.deadline =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() + deadline_s;

  // Workflow-level validation (§2.1 step 2): accepted, finished without evaluation.
  const std::string& ep = r.entry_point;
  if (!IsNull(b, "resources") && b["resources"].contains("gpus") &&
      !(b["resources"]["gpus"].is_number_integer() && b["resources"]["gpus"].get<int64_t>() >= 1)) {
    p.precheck_failure = ValidationFailure(r.task_id, Outcome::kInvalid, "resources.gpus must be an integer >= 1");
  } else if (use_ref_cache && !uuid) {
    p.precheck_failure =
        ValidationFailure(r.task_id, Outcome::kInvalid, "use_reference_cache requires a uuid to key the cache");
  } else if (r.reference_code.find("class " + ep) == std::string::npos) {
    p.precheck_failure = ValidationFailure(r.task_id, Outcome::kInvalid,
                                           "Reference code validation failed: Code must contain a '" + ep + "' class");
  } else if (r.kernel_code.find("class " + ep + "New") == std::string::npos) {
    p.precheck_failure = ValidationFailure(r.task_id, Outcome::kCompileError,
                                           "Kernel code validation failed: Code must contain a '" + ep + "New' class");
  }
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace kgym
