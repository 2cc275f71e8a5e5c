// KernelGYM-compatible routes (research/kernelgym.md §1.2–1.9). Shapes follow KernelGYM's pydantic models:
// every key present, unset values null, errors as {"detail": ...} or the RequestValidationError body.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "server/http_routes.h"

namespace kgym::http {

std::optional<JobView> FinishedJob(Context* ctx, const std::string& id, httplib::Response& res) {
  JobRecord rec;
  if (ctx->service->Get(id, &rec).ok() && rec.state == JobState::kDone) return ViewOf(rec, ctx->options);
  SendDetail(res, 404, "Task " + id + " not found");
  return std::nullopt;
}

bool RunToCompletion(Context* ctx, const ParsedRequest& p, const char* what, httplib::Response& res, JobRecord* rec) {
  bool created = false;
  Status s = ctx->service->Submit(p, rec, &created);
  if (s.ok()) s = ctx->service->Wait(p.job.id, ctx->options.max_wait_s, rec);
  if (s.ok()) return true;
  if (s.code() == Status::Code::kUnavailable) {
    res.set_header("X-Error-Code", "SYSTEM_ERROR");
    res.set_header("Retry-After", "5");
    SendDetail(res, 503, s.message());
  } else if (s.code() == Status::Code::kTimeout) {
    res.set_header("X-Error-Code", "TIMEOUT_ERROR");
    SendDetail(res, 504,
               "the evaluation did not finish within " + std::to_string(ctx->options.max_wait_s) +
                   " s; poll GET /status/" + p.job.id);
  } else {
    res.set_header("X-Error-Code", "SYSTEM_ERROR");
    SendDetail(res, 500, std::string("Failed to submit ") + what + ": " + s.message());
  }
  return false;
}

namespace {
using nlohmann::json;

void SendValidationError(httplib::Response& res, const std::string& message) {
  res.set_header("X-Error-Code", "VALIDATION_ERROR");
  SendJson(res, 400, ValidationErrorBody(message));
}

long RssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

}  // namespace

json MemoryUsage() {
  long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double total = static_cast<double>(pages) * page, free = static_cast<double>(avail) * page;
  double la[1] = {0};
  getloadavg(la, 1);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return {{"cpu_percent", cpus > 0 ? 100.0 * la[0] / cpus : 0.0},
          {"memory_percent", total > 0 ? 100.0 * (total - free) / total : 0.0},
          {"memory_available", free},
          {"memory_total", total},
          {"server_rss_bytes", RssKb() * 1024.0}};
}

namespace {

json QueueCounts(const ServiceStats& st) {
  return {{"pending", st.dispatch.sched.queued + st.dispatch.sched.retrying},
          {"processing", st.dispatch.sched.running - st.dispatch.sched.waiting_memory},
          {"waiting_for_memory", st.dispatch.sched.waiting_memory},
          {"completed", st.completed}};
}
}  // namespace

void RegisterKernelGymRoutes(httplib::Server& svr, Context* ctx) {
  svr.Get("/", [](const httplib::Request& req, httplib::Response& res) {
    if (dashboard::WantsHtml(req)) return dashboard::SendPage(res);
    SendJson(res, 200,
             {{"name", "KernelGym"},
              {"version", "1.0.0"},
              {"description", "GPU Kernel Evaluation Service (kgym)"},
              {"timestamp", KernelGymTimestamp()}});
  });

  svr.Post("/evaluate", [ctx](const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!ParseBody(req, res, &body)) return;
    ParsedRequest p;
    Status s = ParseEvaluationRequest(body, true, &p);
    if (!s.ok()) return SendValidationError(res, s.message());
    JobRecord rec;
    if (!RunToCompletion(ctx, p, "task", res, &rec)) return;
    SendJson(res, 200, KernelGymResult(ViewOf(rec, ctx->options)));
  });

  svr.Post("/evaluate/batch", [ctx](const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!ParseBody(req, res, &body)) return;
    json errors = json::array();
    if (!body.is_object() || !body.contains("batch_id") || !body["batch_id"].is_string())
      errors.push_back({{"loc", {"body", "batch_id"}}, {"msg", "Field required (a string)"}, {"type", "missing"}});
    if (!body.is_object() || !body.contains("tasks") || !body["tasks"].is_array() || body["tasks"].empty() ||
        body["tasks"].size() > 100)
      errors.push_back({{"loc", {"body", "tasks"}},
                        {"msg", "tasks must be a list of 1 to 100 evaluation requests"},
                        {"type", "value_error"}});
    std::vector<ParsedRequest> parsed;
    if (errors.empty()) {
      for (size_t i = 0; i < body["tasks"].size(); ++i) {
        ParsedRequest p;
        Status s = ParseEvaluationRequest(body["tasks"][i], true, &p);
        if (!s.ok()) {
          errors.push_back({{"loc", {"body", "tasks", i}}, {"msg", s.message()}, {"type", "value_error"}});
          continue;
        }
        parsed.push_back(std::move(p));
      }
    }
    if (!errors.empty()) return SendValidationError(res, "Request validation failed: " + errors.dump());
    // Submit every task first so they run concurrently, then collect (KernelGYM ran them one by one).
    std::vector<std::string> submit_errors(parsed.size());
    for (size_t i = 0; i < parsed.size(); ++i) {
      JobRecord rec;
      bool created;
      Status s = ctx->service->Submit(parsed[i], &rec, &created);
      if (!s.ok()) submit_errors[i] = s.message();
    }
    json results = json::array();
    int failed = 0;
    for (size_t i = 0; i < parsed.size(); ++i) {
      JobRecord rec;
      Status s = submit_errors[i].empty() ? ctx->service->Wait(parsed[i].job.id, ctx->options.max_wait_s, &rec)
                                          : Status::Unavailable(submit_errors[i]);
      json r;
      if (s.ok()) {
        JobView v = ViewOf(rec, ctx->options);
        r = KernelGymResult(v);
        if (KernelGymStatus(v) != "completed") failed++;
      } else {  // KernelGYM's per-task exception: a failed response carrying the error
        r = json::object();
        for (const auto& k : kernelgym::ResponseKeys()) r[k] = nullptr;
        r["task_id"] = parsed[i].job.id;
        r["status"] = "failed";
        r["error_message"] = s.message();
        r["error_code"] = s.code() == Status::Code::kTimeout ? "TIMEOUT_ERROR" : "SYSTEM_ERROR";
        r["submitted_at"] = KernelGymTimestamp();
        failed++;
      }
      results.push_back(r);
    }
    SendJson(res, 200,
             {{"batch_id", body["batch_id"]},
              {"total_tasks", parsed.size()},
              {"completed_tasks", static_cast<int>(parsed.size()) - failed},
              {"failed_tasks", failed},
              {"results", results},
              {"batch_status", "completed"},
              {"submitted_at", KernelGymTimestamp()},
              {"completed_at", nullptr}});
  });

  svr.Get(R"(/status/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    JobRecord rec;
    std::string id = req.matches[1];
    if (!ctx->service->Get(id, &rec).ok()) return SendDetail(res, 404, "Task " + id + " not found");
    SendJson(res, 200,
             {{"task_id", rec.id},
              {"status", KernelGymStatus(ViewOf(rec, ctx->options))},
              {"progress", nullptr},
              {"estimated_completion", nullptr},
              {"queue_position", nullptr},
              {"assigned_device", rec.device.empty() ? json() : json(rec.device)}});
  });

  svr.Get(R"(/results/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    if (auto v = FinishedJob(ctx, req.matches[1], res)) SendJson(res, 200, KernelGymResult(*v));
  });

  // KernelGYM cancels only a task that has not finished: a finished or unknown one is 404.
  svr.Delete(R"(/tasks/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    JobRecord rec;
    bool cancelled = false;
    if (!ctx->service->Get(id, &rec).ok() || rec.state == JobState::kDone ||
        !ctx->service->Cancel(id, &cancelled).ok() || !cancelled)
      return SendDetail(res, 404, "Task " + id + " not found or cannot be cancelled");
    SendJson(res, 200, {{"message", "Task " + id + " cancelled successfully"}});
  });

  svr.Get("/health", [ctx](const httplib::Request&, httplib::Response& res) {
    ServiceStats st = ctx->service->Stats();
    json gpus = json::object();
    for (const auto& d : st.dispatch.sched.devices)
      gpus[d.name] = {{"name", d.name},
                      {"available", true},
                      {"slots", d.slots},
                      {"running", d.running},
                      {"busy_fraction", d.uptime_s > 0 ? d.busy_s / d.uptime_s : 0.0}};
    bool draining = ctx->service->draining();
    SendJson(res, draining ? 503 : 200,
             {{"status", draining ? "draining" : "healthy"},
              {"timestamp", KernelGymTimestamp()},
              {"gpu_status", gpus},
              {"queue_status", QueueCounts(st)},
              {"memory_usage", MemoryUsage()},
              {"active_tasks", st.dispatch.sched.running - st.dispatch.sched.waiting_memory},
              {"total_processed", st.completed},
              {"uptime", st.uptime_s}});
  });

  svr.Get("/workers/status", [ctx](const httplib::Request&, httplib::Response& res) {
    ServiceStats st = ctx->service->Stats();
    json workers = st.dispatch.workers;
    for (auto& [id, w] : workers.items()) w["last_heartbeat"] = KernelGymTimestamp();
    SendJson(res, 200, workers);
  });

  svr.Get("/queue/status", [ctx](const httplib::Request&, httplib::Response& res) {
    ServiceStats st = ctx->service->Stats();
    int64_t pending = st.dispatch.sched.queued + st.dispatch.sched.retrying;
    SendJson(res, 200,
             {{"pending", pending},
              {"pending_by_prefix", {{"kgym", pending}}},
              {"worker_queues", json::object()},
              {"processing", st.dispatch.sched.running}});
  });

  svr.Get("/metrics", [ctx](const httplib::Request&, httplib::Response& res) {
    ServiceStats st = ctx->service->Stats();
    int64_t ok = st.outcomes.count("correct") ? st.outcomes.at("correct") : 0;
    double busy = 0;
    for (const auto& d : st.dispatch.sched.devices) busy += d.uptime_s > 0 ? d.busy_s / d.uptime_s : 0;
    if (!st.dispatch.sched.devices.empty()) busy /= static_cast<double>(st.dispatch.sched.devices.size());
    json mem = MemoryUsage();
    json errors = json::object();
    for (const auto& [name, n] : st.outcomes)
      if (name != "correct") errors[name] = n;
    SendJson(res, 200,
             {{"timestamp", KernelGymTimestamp()},
              {"performance_metrics",
               {{"avg_processing_time", st.completed ? st.total_processing_s / st.completed : 0.0},
                {"throughput_per_hour", st.uptime_s > 0 ? 3600.0 * st.completed / st.uptime_s : 0.0},
                {"success_rate", st.completed ? static_cast<double>(ok) / st.completed : 0.0}}},
              {"resource_metrics",
               {{"avg_gpu_utilization", 100.0 * busy},
                {"memory_usage_percent", mem["memory_percent"]},
                {"cpu_usage_percent", mem["cpu_percent"]}}},
              {"queue_metrics", QueueCounts(st)},
              {"error_metrics", errors}});
  });
}

}  // namespace kgym::http
