// Parsing and validation of KernelGYM's EvaluationRequest (research/kernelgym.md §1.3) into a scheduler job.
// Two levels, as in KernelGYM:
//  - request validation (types, lengths, ranges, required fields): a failure is an HTTP 400 whose message
//    lists every offending field ("Request validation failed: [...]");
//  - workflow validation (the `class Model` / `class ModelNew` substring checks, use_reference_cache without
//    uuid, resources.gpus): the request is accepted, and the job finishes at once with a VALIDATION_ERROR
//    result instead of being evaluated (`precheck_failure`).
// Unknown fields are accepted and kept in EvalRequest::extra. A request for the kernel_simple workflow is read by
// server/kernel_simple.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/evaluation.h"
#include "core/status.h"
#include "sched/scheduler.h"

namespace kgym {

struct ParsedRequest {
  SchedJob job;
  bool force_refresh = false;
  std::optional<EvalResult> precheck_failure;  // workflow-level validation failure: finish with this result
};

// `require_task_id` is false for the native API, which generates an id when none is given.
Status ParseEvaluationRequest(const nlohmann::json& body, bool require_task_id, ParsedRequest* out);

// A workflow name as KernelGYM's registry looks it up (trimmed, lower case; "" = kernelbench).
std::string WorkflowName(const std::string& name);

// KernelGYM's 400 body for a validation failure: {"error":"RequestValidationError","message":...,
// "error_code":"VALIDATION_ERROR","task_id":null,"timestamp":...}.
nlohmann::json ValidationErrorBody(const std::string& message);

// Local time as KernelGYM writes it: ISO-8601 with microseconds and a trailing "Z".
std::string KernelGymTimestamp();

}  // namespace kgym
