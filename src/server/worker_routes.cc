// KernelGYM's worker and node routes (/worker/register, /worker/heartbeat, /worker/unregister, /worker/evict_from_lb,
// /node/allocate: research/kernelgym.md §1.7) and /debug/validate. kgym's workers are not KernelGYM's: `kgym worker
// --redis URL` pulls jobs from the API node's Redis queue with leases, so a KernelGYM GPU worker cannot register here.
// Its routes answer 501 with a JSON body that names the replacement, rather than FastAPI's 404 "Not Found": a KernelGYM
// worker shuts itself down on any non-200 heartbeat, and its operator reads why. /debug/validate is answered: it
// validates a request as POST /evaluate would, without accepting it.
#include "server/http_routes.h"
#include "server/request_parse.h"

namespace kgym::http {

namespace {

using json = nlohmann::json;

void SendNotImplemented(const httplib::Request& req, httplib::Response& res) {
  res.set_header("X-Error-Code", "NOT_IMPLEMENTED");
  SendJson(res, 501,
           {{"detail",
             req.path + " is KernelGYM's worker protocol, which kgym does not speak: KernelGYM's GPU workers cannot "
                        "join a kgym server. Run `kgym worker --redis URL` on each GPU node instead (with `kgym serve "
                        "--redis URL` here); see README, 'Coming from KernelGYM'."},
            {"error_code", "NOT_IMPLEMENTED"},
            {"replacement", "kgym worker --redis URL"}});
}

}  // namespace

void RegisterWorkerRoutes(httplib::Server& svr, Context* ctx) {
  for (const char* path :
       {"/worker/register", "/worker/heartbeat", "/worker/unregister", "/worker/evict_from_lb", "/node/allocate"})
    svr.Post(path, SendNotImplemented);

  // What KernelGYM's debug route tells: whether the request would be accepted, every field error, and what it asks.
  svr.Post("/debug/validate", [ctx](const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!ParseBody(req, res, &body)) return;
    ParsedRequest p;
    Status s = ParseEvaluationRequest(body, true, &p);
    json out = {{"valid", s.ok() && !p.precheck_failure}, {"errors", json::array()}, {"warnings", json::array()}};
    if (!s.ok()) out["errors"].push_back(s.message());
    if (s.ok() && p.precheck_failure) out["errors"].push_back(p.precheck_failure->error_message);
    const EvalRequest& r = p.job.request;
    out["request_info"] = {{"task_id", body.is_object() ? body.value("task_id", json()) : json()},
                           {"backend", r.backend},
                           {"entry_point", r.entry_point},
                           {"num_correct_trials", r.num_correct_trials},
                           {"num_perf_trials", r.num_perf_trials},
                           {"timeout", r.timeout_s},
                           {"reference_code_length", r.reference_code.size()},
                           {"kernel_code_length", r.kernel_code.size()},
                           {"mode", ctx->options.compat ? "compat" : "default"}};
    SendJson(res, 200, out);
  });
}

}  // namespace kgym::http
