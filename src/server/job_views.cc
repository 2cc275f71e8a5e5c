// How a stored job reads on KernelGYM's routes and on the native API (http_routes.h: JobView).
#include "sched/job_codec.h"
#include "server/http_routes.h"
#include "server/kernel_simple.h"

namespace kgym::http {

namespace {
using nlohmann::json;

constexpr const char* kOptInField = "kgym_result";  // a request's opt-in to kgym's result on KernelGYM's routes

EvalResult ParsedResult(const JobRecord& rec) {
  auto j = json::parse(rec.result_json, nullptr, false);
  if (!j.is_object()) {
    EvalResult r;
    r.task_id = rec.id;
    r.error_code = "SYSTEM_ERROR";
    r.error_message = "the stored result is not valid JSON";
    return r;
  }
  return EvalResult::FromJson(j);
}
}  // namespace

JobView ViewOf(const JobRecord& rec, const HttpOptions& options) {
  JobView v;
  v.rec = rec;
  v.done = rec.state == JobState::kDone;
  if (v.done) v.result = ParsedResult(rec);
  SchedJob job;
  if (SchedJobFromJson(rec.request_json, &job).ok()) {
    const EvalRequest& req = job.request;
    v.kgym_result = !options.compat && req.extra.value(kOptInField, false) == true;
    v.kernel_simple = IsKernelSimple(req);
    v.checks_correctness = KernelSimpleChecksCorrectness(req);
    if (v.kernel_simple && v.done) AsKernelSimpleResult(req, &v.result);
  }
  v.times = {rec.created_at, rec.finished_at};
  return v;
}

std::string NativeStatus(const JobRecord& rec) {
  if (rec.state == JobState::kQueued) return "pending";
  if (rec.state == JobState::kRunning) return "processing";
  EvalResult r = ParsedResult(rec);
  return kernelgym::IsCancelled(r) ? "cancelled" : r.Status(false);
}

json NativeResult(const JobRecord& rec) {
  auto j = json::parse(rec.result_json, nullptr, false);
  return j.is_object() ? EvalResult::FromJson(j).ToJson() : json();
}

std::string KernelGymStatus(const JobView& v) {
  if (v.kgym_result || !v.done) return NativeStatus(v.rec);
  if (v.kernel_simple) return kernelgym::IsCancelled(v.result) ? "failed" : kernelgym::SimpleStatus(v.result);
  return kernelgym::TaskStatus(v.result);
}

json KernelGymResult(const JobView& v) {
  if (v.kgym_result) return NativeResult(v.rec);
  if (!v.kernel_simple) return kernelgym::EvaluationResponse(v.result, v.times);
  // A kernel_simple result read through GET /results: KernelGYM's EvaluationResponse model over the workflow's
  // result (no reference, no speedup: null).
  json simple = kernelgym::SimpleResult(v.result, v.checks_correctness, v.times);
  json j = kernelgym::EvaluationResponse(v.result, v.times);
  for (const auto& k : kernelgym::ResponseKeys())
    j[k] = simple.contains(k) ? simple[k]
                              : (k == "status" || k == "submitted_at" || k == "processing_time" ? j[k] : json());
  j["status"] = KernelGymStatus(v);
  return j;
}

}  // namespace kgym::http
