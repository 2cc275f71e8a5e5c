// kgym's native API: asynchronous submission, long-poll, server-sent progress, Prometheus metrics.
#include <random>

#include "server/http_routes.h"

namespace kgym::http {

namespace {
using nlohmann::json;

std::string NewId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  std::snprintf(buf, sizeof buf, "eval-%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

json JobJson(const JobRecord& rec) {
  json j = {{"id", rec.id},
            {"state", JobStateName(rec.state)},
            {"status", NativeStatus(rec)},
            {"generation", rec.generation},
            {"attempts", rec.attempts},
            {"device", rec.device.empty() ? json() : json(rec.device)},
            {"created_at", rec.created_at},
            {"started_at", rec.started_at > 0 ? json(rec.started_at) : json()},
            {"finished_at", rec.finished_at > 0 ? json(rec.finished_at) : json()},
            {"result", nullptr}};
  if (rec.state == JobState::kDone) j["result"] = NativeResult(rec);
  return j;
}

std::string SseEvent(const JobEvent& e) {
  return "id: " + std::to_string(e.seq) + "\nevent: " + e.type + "\ndata: " + e.data.dump() + "\n\n";
}
}  // namespace

void RegisterNativeRoutes(httplib::Server& svr, Context* ctx) {
  svr.Post("/v1/evaluations", [ctx](const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!ParseBody(req, res, &body)) return;
    if (body.is_object() && (!body.contains("task_id") || body["task_id"].is_null())) body["task_id"] = NewId();
    ParsedRequest p;
    Status s = ParseEvaluationRequest(body, true, &p);
    if (!s.ok()) {
      res.set_header("X-Error-Code", "VALIDATION_ERROR");
      return SendJson(res, 400, ValidationErrorBody(s.message()));
    }
    JobRecord rec;
    bool created = false;
    s = ctx->service->Submit(p, &rec, &created);
    if (!s.ok()) {
      res.set_header("Retry-After", "5");
      return SendDetail(res, s.code() == Status::Code::kUnavailable ? 503 : 500, s.message());
    }
    json j = JobJson(rec);
    j["created"] = created;
    j["links"] = {{"self", "/v1/evaluations/" + rec.id}, {"events", "/v1/evaluations/" + rec.id + "/events"}};
    SendJson(res, 202, j);
  });

  svr.Get(R"(/v1/evaluations/([^/]+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    double wait = req.has_param("wait") ? std::atof(req.get_param_value("wait").c_str()) : 0;
    wait = std::max(0.0, std::min(wait, 300.0));
    JobRecord rec;
    Status s = wait > 0 ? ctx->service->Wait(id, wait, &rec) : ctx->service->Get(id, &rec);
    if (s.code() == Status::Code::kNotFound) return SendDetail(res, 404, "no evaluation with id '" + id + "'");
    SendJson(res, 200, JobJson(rec));
  });

  svr.Delete(R"(/v1/evaluations/([^/]+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    bool cancelled = false;
    std::string id = req.matches[1];
    if (!ctx->service->Cancel(id, &cancelled).ok()) return SendDetail(res, 404, "no evaluation with id '" + id + "'");
    SendJson(res, 200, {{"id", id}, {"cancelled", cancelled}});
  });

  svr.Get(R"(/v1/evaluations/([^/]+)/events)", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    JobRecord rec;
    if (!ctx->service->Get(id, &rec).ok()) return SendDetail(res, 404, "no evaluation with id '" + id + "'");
    EvaluationService* service = ctx->service;
    auto last = std::make_shared<int64_t>(0);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [service, id, last](size_t, httplib::DataSink& sink) {
      std::vector<JobEvent> events;
      bool done = false;
      service->Events(id, *last, 15.0, &events, &done);
      for (const auto& e : events) {
        std::string text = SseEvent(e);
        if (!sink.write(text.data(), text.size())) return false;
        *last = e.seq;
      }
      if (events.empty() && !done) {
        static const std::string keepalive = ": keep-alive\n\n";
        if (!sink.write(keepalive.data(), keepalive.size())) return false;
      }
      if (done) {
        JobRecord rec;
        if (service->Get(id, &rec).ok() && rec.state == JobState::kDone) {
          JobEvent final{*last + 1, "result", NativeResult(rec)};
          std::string text = SseEvent(final);
          sink.write(text.data(), text.size());
        }
        sink.done();
      }
      return true;
    });
  });

  svr.Get("/v1/metrics", [ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(PrometheusText(ctx->service->Stats()), "text/plain; version=0.0.4");
  });
}

}  // namespace kgym::http
