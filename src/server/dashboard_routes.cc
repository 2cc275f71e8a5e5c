// The dashboard over a running service: its page, the service routes fed by this service's store and counters,
// and the run routes when --runs names run folders.
#include "server/http_routes.h"

namespace kgym::http {

namespace {
using nlohmann::json;

json LiveJson(Context* ctx) {
  ServiceStats st = ctx->service->Stats();
  const SchedulerStats& s = st.dispatch.sched;
  json devices = json::array();
  for (const auto& d : s.devices)
    devices.push_back({{"name", d.name},
                       {"slots", d.slots},
                       {"running", d.running},
                       {"busy_fraction", d.uptime_s > 0 ? d.busy_s / d.uptime_s : 0.0},
                       {"health", ctx->service->draining() ? "draining" : "online"}});
  json admission = nullptr;
  if (const auto& m = st.dispatch.memory)
    admission = {{"budget_bytes", m->budget_bytes},
                 {"reserved_bytes", m->reserved_bytes},
                 {"resident_bytes", m->resident_bytes},
                 {"in_flight", m->in_flight},
                 {"waiting", m->waiting},
                 {"waited_total", m->waited_total}};
  json phases = json::object();
  for (const auto& [name, p] : s.phases) phases[name] = {{"count", p.count}, {"total_s", p.total_s}};
  return {{"uptime_s", st.uptime_s},
          {"accepted", st.accepted},
          {"deduplicated", st.deduplicated},
          {"completed", st.completed},
          {"retries", s.retries},
          {"draining", ctx->service->draining()},
          {"mode", ctx->options.compat ? "compat" : "default"},
          {"queue", {{"queued", s.queued}, {"retrying", s.retrying}, {"running", s.running}}},
          {"devices", devices},
          {"workers", st.dispatch.workers},
          {"memory", MemoryUsage()},
          {"admission", admission},
          {"phases", phases}};
}
}  // namespace

void RegisterDashboardRoutes(httplib::Server& svr, Context* ctx) {
  std::vector<std::string> features = {"service"};
  if (!ctx->options.run_roots.empty()) {
    ctx->runs = std::make_shared<dashboard::RunCatalog>(ctx->options.run_roots);
    dashboard::RegisterRunRoutes(svr, ctx->runs.get());
    features.push_back("runs");
  }
  dashboard::RegisterPageRoutes(svr, features);
  dashboard::RegisterServiceRoutes(svr, {ctx->service->store(), [ctx] { return LiveJson(ctx); }});
}

}  // namespace kgym::http
