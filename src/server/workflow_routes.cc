// KernelGYM's generic workflow routes (research/kernelgym.md §1.6): POST /workflow/submit runs a workflow's payload
// to completion, GET /workflow/results/{id} reads it back, both as a WorkflowResponse {task_id, status, result,
// error_message, error_code, submitted_at, completed_at} whose result is the workflow's own result without its
// status. Workflows: kernelbench (the payload is an EvaluationRequest) and kernel_simple (server/kernel_simple.h).
// As KernelGYM: a task id already stored answers its stored result unless force_refresh; a missing task id or an
// unknown workflow is 400 {"detail"}; a payload its workflow cannot run is 500 "Failed to submit workflow: ...".
#include "server/http_routes.h"
#include "server/kernel_simple.h"

namespace kgym::http {

namespace {
using nlohmann::json;

json WorkflowResponse(const JobView& v) {
  json result = v.kgym_result     ? KernelGymResult(v)
                : v.kernel_simple ? kernelgym::SimpleResult(v.result, v.checks_correctness, v.times)
                                  : kernelgym::EvaluationResponse(v.result, v.times);
  for (const char* k : {"status", "submitted_at", "processing_time"}) result.erase(k);
  return {{"task_id", v.rec.id},
          {"status", KernelGymStatus(v)},
          {"result", result},
          {"error_message", result.value("error_message", json())},
          {"error_code", result.value("error_code", json())},
          {"submitted_at", kernelgym::Timestamp(v.times.submitted)},
          {"completed_at", result.value("completed_at", json())}};
}

// WorkflowRequest's own fields (pydantic-validated in KernelGYM: a mistyped one is its 400).
bool ValidRequest(const json& body, httplib::Response& res) {
  json errors = json::array();
  auto bad = [&](const char* k, const char* msg, const char* type) {
    errors.push_back({{"loc", {"body", k}}, {"msg", msg}, {"type", type}});
  };
  if (!body.is_object()) {
    bad("__root__", "Input should be a valid dictionary or object", "dict_type");
  } else {
    if (body.contains("workflow") && !body["workflow"].is_string())
      bad("workflow", "Input should be a valid string", "string_type");
    if (body.contains("payload") && !body["payload"].is_object())
      bad("payload", "Input should be a valid dictionary", "dict_type");
    if (body.contains("task_id") && !body["task_id"].is_null() && !body["task_id"].is_string())
      bad("task_id", "Input should be a valid string", "string_type");
    if (body.contains("force_refresh") && !body["force_refresh"].is_boolean())
      bad("force_refresh", "Input should be a valid boolean", "bool_type");
    if (body.contains("resources") && !body["resources"].is_null() && !body["resources"].is_object())
      bad("resources", "Input should be a valid dictionary", "dict_type");
  }
  if (errors.empty()) return true;
  res.set_header("X-Error-Code", "VALIDATION_ERROR");
  SendJson(res, 400, ValidationErrorBody("Request validation failed: " + errors.dump()));
  return false;
}
}  // namespace

void RegisterWorkflowRoutes(httplib::Server& svr, Context* ctx) {
  svr.Post("/workflow/submit", [ctx](const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!ParseBody(req, res, &body) || !ValidRequest(body, res)) return;
    json payload = body.value("payload", json::object());
    std::string id = body.value("task_id", json()).is_string() ? body["task_id"].get<std::string>() : "";
    if (id.empty() && payload.contains("task_id") && payload["task_id"].is_string()) id = payload["task_id"];
    if (id.empty()) return SendDetail(res, 400, "task_id is required");
    payload["task_id"] = id;
    const bool refresh = body.value("force_refresh", false);
    if (!payload.contains("resources") || payload["resources"].is_null())
      payload["resources"] = body.value("resources", json());
    JobRecord rec;
    if (!refresh && ctx->service->Get(id, &rec).ok() && rec.state == JobState::kDone)
      return SendJson(res, 200, WorkflowResponse(ViewOf(rec, ctx->options)));
    const std::string workflow = WorkflowName(body.value("workflow", std::string("kernelbench")));
    ParsedRequest p;
    Status s;
    if (workflow == "kernelbench") {
      s = ParseEvaluationRequest(payload, true, &p);
    } else if (workflow == "kernel_simple") {
      s = ParseKernelSimplePayload(payload, &p);
    } else {
      return SendDetail(res, 400, "Registry missing '" + workflow + "'");
    }
    if (!s.ok()) {
      res.set_header("X-Error-Code", "VALIDATION_ERROR");
      return SendDetail(res, 500, "Failed to submit workflow: " + s.message());
    }
    p.force_refresh = refresh;
    if (!RunToCompletion(ctx, p, "workflow", res, &rec)) return;
    SendJson(res, 200, WorkflowResponse(ViewOf(rec, ctx->options)));
  });

  svr.Get(R"(/workflow/results/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    if (auto v = FinishedJob(ctx, req.matches[1], res)) SendJson(res, 200, WorkflowResponse(*v));
  });
}

}  // namespace kgym::http
