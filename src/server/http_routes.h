// Internal to src/server: route tables shared by http_server.cc, kernelgym_routes.cc and native_routes.cc.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "core/kernelgym_schema.h"
#include "server/dashboard/dashboard.h"
#include "server/evaluation_service.h"
#include "server/http_server.h"

namespace kgym::http {

struct Context {
  EvaluationService* service;
  HttpOptions options;
  double started_unix = 0;
  std::shared_ptr<dashboard::RunCatalog> runs;  // set when options.run_roots is not empty
};

void RegisterKernelGymRoutes(httplib::Server& svr, Context* ctx);
// POST /workflow/submit and GET /workflow/results/{id} (kernelbench and kernel_simple).
void RegisterWorkflowRoutes(httplib::Server& svr, Context* ctx);
void RegisterNativeRoutes(httplib::Server& svr, Context* ctx);
// KernelGYM's worker and node routes (501, naming `kgym worker`) and POST /debug/validate.
void RegisterWorkerRoutes(httplib::Server& svr, Context* ctx);
// The dashboard's page, its service routes over the service's store and live counters, and the run routes.
void RegisterDashboardRoutes(httplib::Server& svr, Context* ctx);
// Host CPU load and memory (KernelGYM's memory_usage object, plus the server's RSS).
nlohmann::json MemoryUsage();

// How one job reads on each API (job_views.cc). On KernelGYM's routes a job answers with KernelGYM's models
// (core/kernelgym_schema.h) unless its request opted in with "kgym_result": true (ignored under --mode compat);
// the native /v1 API always answers with kgym's own result and statuses.
struct JobView {
  JobRecord rec;
  bool done = false;
  EvalResult result;           // when done
  bool kgym_result = false;    // the request's opt-in, honoured
  bool kernel_simple = false;  // made by /workflow/submit with workflow kernel_simple
  bool checks_correctness = true;
  kernelgym::JobTimes times;
};
JobView ViewOf(const JobRecord& rec, const HttpOptions& options);
// KernelGYM TaskStatus: pending, processing, completed, failed (with the opt-in: kgym's, "cancelled" included).
std::string KernelGymStatus(const JobView& v);
// A finished job's EvaluationResponse (with the opt-in: kgym's result).
nlohmann::json KernelGymResult(const JobView& v);
// kgym's status (pending, processing, completed, failed, cancelled) and result (EvalResult::ToJson) for /v1.
std::string NativeStatus(const JobRecord& rec);
nlohmann::json NativeResult(const JobRecord& rec);
// The finished job `id`, or KernelGYM's 404 {"detail": "Task <id> not found"} sent and nullopt.
std::optional<JobView> FinishedJob(Context* ctx, const std::string& id, httplib::Response& res);
// Accepts one request and waits for its result. On failure sends the HTTP error ("Failed to submit <what>: ..." for
// an internal one) and returns false.
bool RunToCompletion(Context* ctx, const ParsedRequest& p, const char* what, httplib::Response& res, JobRecord* rec);
void SendJson(httplib::Response& res, int code, const nlohmann::json& body);
void SendDetail(httplib::Response& res, int code, const std::string& detail);
// Parses a JSON body; on failure sends KernelGYM's 400 and returns false.
bool ParseBody(const httplib::Request& req, httplib::Response& res, nlohmann::json* out);
// Prometheus text exposition of the service's counters.
std::string PrometheusText(const ServiceStats& stats);

}  // namespace kgym::http
