// KernelGYM's wire models (research/kernelgym.md §1.4-1.6, §2.9, §4): what a KernelGYM server answers on its own
// routes, as pure functions of kgym's EvalResult. The one place that knows KernelGYM's statuses, error paths and
// fields; the server's KernelGYM routes, `kgym eval --compat` and the in-process agent's compat mode all answer
// through it, so a client written for KernelGYM (Dr.Kernel's reward client, its multi-turn engine) gets the
// statuses, error codes, field set and result sizes it was trained with.
//
// Protocol, not verdicts: the outcome stays kgym's (its hack and precision rules are stricter than KernelGYM's);
// what changes is how the outcome is spelled. The rules, from KernelGYM's own result paths:
//  - status "failed" whenever the candidate did not compile (KernelGYM's kernel subtask fails whenever compiled is
//    false), for workflow validation failures (missing `class ModelNew`), for timeouts and dead workers (its
//    failed-result path: compiled false, runtimes -1, metadata {"error"}), for a reference that could not be run,
//    and for a cancelled task (its fail_task record: every result field null, error "Task cancelled",
//    SYSTEM_ERROR); "completed" for runtime errors, wrong outputs, hacks and correct kernels;
//  - every key of EvaluationResponse is present (unset ones null); metadata carries only keys KernelGYM's metadata
//    has (§4.2), so a correct result is no larger than KernelGYM's for the same evaluation (which also carries its
//    profiler's kernel table); kgym's richer fields (outcome, outcome_detail, timing, correctness_detail, its ~60
//    metadata keys) stay on the native /v1 API;
//  - error_message starts as KernelGYM's does ("Kernel compilation failed: ", "Kernel execution failed: ",
//    "Kernel produced incorrect results", "Task processing failed: ") and continues with kgym's own reason.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/evaluation.h"

namespace kgym::kernelgym {

// Every key of KernelGYM's EvaluationResponse, in its order.
const std::vector<std::string>& ResponseKeys();

// When a job was submitted and finished (unix seconds; 0 = unknown): KernelGYM's submitted_at, completed_at and
// processing_time (which KernelGYM itself leaves null).
struct JobTimes {
  double submitted = 0;
  double finished = 0;
};

// True for a result that says the evaluation was cancelled (kgym writes outcome "invalid", detail "cancelled...").
bool IsCancelled(const EvalResult& r);

// KernelGYM's TaskStatus of a finished result: "completed" or "failed".
std::string TaskStatus(const EvalResult& r);

// KernelGYM's EvaluationResponse for a finished result (POST /evaluate, GET /results/{id}, batch items).
nlohmann::json EvaluationResponse(const EvalResult& r, const JobTimes& times);

// The result of a kernel_simple evaluation as KernelGYM's workflow returns it (a KernelEvaluationResult: task_id,
// base_task_id, compiled, correctness, decoy_kernel, kernel_runtime, metadata, error_message, error_code; no
// reference, no speedup), with its status. `correctness_checked` is false where no case had expected outputs
// (correctness is then null, as KernelGYM's).
nlohmann::json SimpleResult(const EvalResult& r, bool correctness_checked, const JobTimes& times);
std::string SimpleStatus(const EvalResult& r);

// ISO-8601 local time with microseconds and a trailing "Z", as KernelGYM writes timestamps; null for 0.
nlohmann::json Timestamp(double unix_seconds);

}  // namespace kgym::kernelgym
