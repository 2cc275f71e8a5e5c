// KernelGYM's kernel_simple workflow (research/kernelgym.md §2.9; its README's example 1) on kgym's evaluator: a
// candidate checked against test cases it or the request brings (`cases`, `cases_code`'s get_cases()/get_inputs(),
// else the kernel code's own), with no reference implementation.
//
// kgym evaluates it as a KernelBench task whose reference is generated from the cases: its get_inputs() hands out
// the cases' inputs (those with expected outputs, in turn) and its Model returns each case's expected outputs; on
// the inputs kgym widens for its extra trials no case matches, the generated reference answers non-finite values
// and those trials are skipped. So the candidate runs in kgym's sandbox, its outputs are compared outside its
// process with kgym's tolerances (the request's; a case's own rtol/atol are not read), and it is timed like any
// candidate.
// Where no case has expected outputs (no "output" key in the cases' source), nothing is checked: the reference is
// the candidate's own class and the result's correctness is null, as KernelGYM's.
//
// The cases' source runs in the reference's worker, sandboxed like a candidate; a reference generated from a
// candidate's own cases is keyed by that code, so it is never shared with another request.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "server/request_parse.h"

namespace kgym {

// A kernel_simple payload (KernelGYM's KernelSimpleTask fields; unknown ones ignored) as a kgym job. InvalidArgument
// names the offending field.
Status ParseKernelSimplePayload(const nlohmann::json& payload, ParsedRequest* out);

// Whether a stored request is a kernel_simple job, and whether its correctness is checked against expected outputs.
bool IsKernelSimple(const EvalRequest& req);
bool KernelSimpleChecksCorrectness(const EvalRequest& req);

// A kernel_simple job's result as KernelGYM reports it: the backend as the request sent it (kgym runs any backend but
// "cuda" as Triton code), and the kernel's or its cases' code failing to load (kgym's generated reference failing:
// VALIDATION_ERROR "the reference is broken (...)") as KernelGYM's RUNTIME_ERROR "Failed to load cases: ...".
void AsKernelSimpleResult(const EvalRequest& req, EvalResult* r);

}  // namespace kgym
