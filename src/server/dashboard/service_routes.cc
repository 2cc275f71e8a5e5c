// The routes of a running service: summary, outcome timeline, pages of jobs, one job.
#include <chrono>
#include <cmath>
#include <set>

#include "server/dashboard/dashboard.h"
#include "server/dashboard/gpu_probe.h"
#include "server/dashboard/json_reply.h"

namespace kgym::dashboard {

namespace {
using nlohmann::json;

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

json OrNull(double unix_s) { return unix_s > 0 ? json(unix_s) : json(); }

// One line of the job list: the row's columns and the few result fields the list shows.
json JobRow(const JobRecord& r) {
  json row = {{"id", r.id},
              {"state", JobStateName(r.state)},
              {"outcome", r.outcome.empty() ? json() : json(r.outcome)},
              {"hack_family", r.hack_family.empty() ? json() : json(r.hack_family)},
              {"device", r.device.empty() ? json() : json(r.device)},
              {"attempts", r.attempts},
              {"created_at", r.created_at},
              {"started_at", OrNull(r.started_at)},
              {"finished_at", OrNull(r.finished_at)},
              {"speedup", nullptr},
              {"kernel_runtime", nullptr},
              {"reference_runtime", nullptr},
              {"outcome_detail", nullptr}};
  auto result = json::parse(r.result_json, nullptr, false);
  if (r.state != JobState::kDone || !result.is_object()) return row;
  for (const char* k : {"speedup", "kernel_runtime", "reference_runtime"})
    if (result.contains(k) && result[k].is_number()) row[k] = result[k];
  if (result.contains("outcome_detail") && result["outcome_detail"].is_string()) {
    std::string d = result["outcome_detail"];
    row["outcome_detail"] = d.size() > 300 ? d.substr(0, 300) + "..." : d;
  }
  return row;
}

json JobDetail(const JobRecord& r) {
  json j = JobRow(r);
  j["generation"] = r.generation;
  j["priority"] = r.priority;
  j["deadline"] = OrNull(r.deadline);
  auto stored = json::parse(r.request_json, nullptr, false);
  j["request"] = stored.is_object() && stored.contains("request") ? stored["request"] : stored;
  auto result = json::parse(r.result_json, nullptr, false);
  j["result"] = r.state == JobState::kDone && result.is_object() ? result : json();
  return j;
}

const std::set<std::string>& ListableOutcomes() {
  static const std::set<std::string> k = {"queued",        "running",  "correct", "incorrect",          "compile_error",
                                          "runtime_error", "timeout",  "crashed", "resource_exhausted", "hacked",
                                          "invalid",       "cancelled"};
  return k;
}

// Finished jobs in the store, per label and per hack family.
void AddOutcomeTotals(JobStore* store, json* s) {
  std::vector<OutcomeCount> counts;
  json outcomes = json::object(), families = json::object();
  if (store->CountOutcomes(0, 1e12, &counts).ok())
    for (const auto& c : counts) {
      outcomes[c.outcome] = outcomes.value(c.outcome, int64_t{0}) + c.count;
      if (!c.hack_family.empty()) families[c.hack_family] = families.value(c.hack_family, int64_t{0}) + c.count;
    }
  (*s)["outcomes"] = outcomes;
  (*s)["hack_families"] = families;
}

// Jobs in the store by state, the age of the oldest queued one, and what runs on each device.
void AddStoreState(JobStore* store, double now, json* s) {
  std::map<JobState, int64_t> by_state;
  store->CountByState(&by_state);
  (*s)["jobs"] = {{"queued", by_state[JobState::kQueued]},
                  {"running", by_state[JobState::kRunning]},
                  {"done", by_state[JobState::kDone]}};
  std::vector<JobRecord> page;
  int64_t total = 0;
  store->ListJobs({"", "queued", 0, 1, true}, &page, &total);
  (*s)["oldest_queued_age_s"] = page.empty() ? json() : json(std::max(0.0, now - page[0].created_at));
  store->ListJobs({"", "running", 0, 500}, &page, &total);
  json running = json::array();
  for (const auto& r : page)
    running.push_back({{"id", r.id},
                       {"device", r.device},
                       {"started_at", OrNull(r.started_at)},
                       {"running_s", r.started_at > 0 ? json(now - r.started_at) : json()}});
  (*s)["running_jobs"] = running;
  if (!(*s)["devices"].is_array()) return;
  for (auto& d : (*s)["devices"]) {
    d["current_jobs"] = json::array();
    for (const auto& r : running)
      if (r["device"] == d["name"]) d["current_jobs"].push_back(r);
  }
}

json Summary(const ServiceSources& src, GpuProbe* gpus) {
  const double now = UnixNow();
  json s = src.live ? src.live() : json::object();
  s["now"] = now;
  AddStoreState(src.store, now, &s);
  AddOutcomeTotals(src.store, &s);
  std::vector<OutcomeCount> recent;
  int64_t finished = 0;
  if (src.store->CountOutcomes(now - 300, 1, &recent).ok())
    for (const auto& c : recent) finished += c.count;
  s["throughput"] = {{"window_s", 300}, {"finished", finished}, {"per_minute", finished / 5.0}};
  bool cuda = false;
  for (const auto& d : s.value("devices", json::array())) cuda |= d.value("name", "").rfind("cuda", 0) == 0;
  s["gpus"] = cuda ? gpus->Read() : json::array();
  return s;
}

json Timeline(JobStore* store, double window_s, double bucket_s) {
  const double now = UnixNow();
  const double since = std::floor((now - window_s) / bucket_s) * bucket_s;
  const int n = static_cast<int>(std::ceil((now - since) / bucket_s));
  json buckets = json::array();
  for (int i = 0; i < n; ++i)
    buckets.push_back(
        {{"t", since + i * bucket_s}, {"total", 0}, {"outcomes", json::object()}, {"hack_families", json::object()}});
  std::vector<OutcomeCount> counts;
  store->CountOutcomes(since, bucket_s, &counts);
  for (const auto& c : counts) {
    int i = static_cast<int>(std::llround((c.bucket_start - since) / bucket_s));
    if (i < 0 || i >= n) continue;
    json& b = buckets[i];
    b["total"] = b["total"].get<int64_t>() + c.count;
    b["outcomes"][c.outcome] = b["outcomes"].value(c.outcome, int64_t{0}) + c.count;
    if (!c.hack_family.empty())
      b["hack_families"][c.hack_family] = b["hack_families"].value(c.hack_family, int64_t{0}) + c.count;
  }
  return {{"now", now}, {"since", since}, {"bucket_s", bucket_s}, {"buckets", buckets}};
}
}  // namespace

void RegisterServiceRoutes(httplib::Server& svr, ServiceSources sources) {
  auto gpus = std::make_shared<GpuProbe>();
  svr.Get("/v1/dashboard/summary", [sources, gpus](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, Summary(sources, gpus.get()));
  });
  svr.Get("/v1/dashboard/timeline", [sources](const httplib::Request& req, httplib::Response& res) {
    double window = NumberParam(req, "window_s", 3600, 60, 7 * 24 * 3600.0);
    double bucket = NumberParam(req, "bucket_s", 60, 1, 24 * 3600.0);
    bucket = std::max(bucket, window / 720);  // at most ~720 buckets
    Reply(res, 200, Timeline(sources.store, window, bucket));
  });
  svr.Get("/v1/jobs", [sources](const httplib::Request& req, httplib::Response& res) {
    JobQuery q;
    q.id_contains = req.get_param_value("q");
    q.outcome = req.get_param_value("outcome");
    if (!q.outcome.empty() && !ListableOutcomes().count(q.outcome))
      return ReplyDetail(res, 400,
                         "outcome must be one of queued, running, correct, incorrect, compile_error, "
                         "runtime_error, timeout, crashed, resource_exhausted, hacked, invalid, cancelled");
    q.offset = static_cast<int64_t>(NumberParam(req, "offset", 0, 0, 1e12));
    q.limit = static_cast<int>(NumberParam(req, "limit", 50, 1, 200));
    std::vector<JobRecord> page;
    int64_t total = 0;
    Status s = sources.store->ListJobs(q, &page, &total);
    if (!s.ok()) return ReplyDetail(res, 500, s.ToString());
    json jobs = json::array();
    for (const auto& r : page) jobs.push_back(JobRow(r));
    Reply(res, 200, {{"total", total}, {"offset", q.offset}, {"limit", q.limit}, {"jobs", jobs}});
  });
  svr.Get(R"(/v1/jobs/([^/]+))", [sources](const httplib::Request& req, httplib::Response& res) {
    JobRecord r;
    std::string id = req.matches[1];
    if (!sources.store->Get(id, &r).ok()) return ReplyDetail(res, 404, "no job with id '" + id + "'");
    Reply(res, 200, JobDetail(r));
  });
}

}  // namespace kgym::dashboard
