// Internal to src/server: route tables shared by http_server.cc, kernelgym_routes.cc and native_routes.cc.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

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
void RegisterNativeRoutes(httplib::Server& svr, Context* ctx);
// The dashboard's page, its service routes over the service's store and live counters, and the run routes.
void RegisterDashboardRoutes(httplib::Server& svr, Context* ctx);
// Host CPU load and memory (KernelGYM's memory_usage object, plus the server's RSS).
nlohmann::json MemoryUsage();

// The client-facing result of a finished job (KernelGYM EvaluationResponse plus kgym's fields).
nlohmann::json ResultJson(const JobRecord& rec, bool compat);
// KernelGYM TaskStatus of a job: pending, processing, completed, failed, cancelled.
std::string StatusOf(const JobRecord& rec, bool compat);
void SendJson(httplib::Response& res, int code, const nlohmann::json& body);
void SendDetail(httplib::Response& res, int code, const std::string& detail);
// Parses a JSON body; on failure sends KernelGYM's 400 and returns false.
bool ParseBody(const httplib::Request& req, httplib::Response& res, nlohmann::json* out);
// Prometheus text exposition of the service's counters.
std::string PrometheusText(const ServiceStats& stats);

}  // namespace kgym::http
