// The dashboard: one page (web/: HTML, CSS and plain JavaScript, with Debian's Chart.js, all embedded in the
// binary; see assets.h) and the JSON routes it reads, which are part of kgym's documented native API.
//
//   page         GET /dashboard (and GET / for a browser: WantsHtml), GET /assets/<name>, GET /v1/ui
//   a service    GET /v1/dashboard/summary, GET /v1/dashboard/timeline, GET /v1/jobs, GET /v1/jobs/<id>
//   run folders  GET /v1/runs, GET /v1/runs/<id>, GET /v1/runs/<id>/trajectories, GET /v1/runs/<id>/trajectory
//
// `kgym serve` registers the page and the service routes (and the run routes with --runs); `kgym view` the page
// and the run routes. Every value from a job or a run reaches the page as JSON data and is shown as text.
// Routes only read: the store, the run folders and the live statistics they are given.
//
// Thread-safe: handlers run on the HTTP server's threads; RunCatalog locks its cache.
#pragma once

#include <httplib.h>

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "grade/run_folder.h"
#include "store/job_store.h"

namespace kgym::dashboard {

// True when the request comes from a browser navigating (Accept names text/html), not from an API client.
bool WantsHtml(const httplib::Request& req);
// Answers with the page.
void SendPage(httplib::Response& res);
// GET /dashboard, GET /assets/<name>, and GET /v1/ui ({"features": features}: "service" and/or "runs", which
// parts of the page have data here).
void RegisterPageRoutes(httplib::Server& svr, const std::vector<std::string>& features);

// What the service routes read. `live` returns the running service's counters as JSON: {"uptime_s",
// "accepted", "completed", "draining", "queue": {"queued", "retrying", "running"}, "devices": [{"name",
// "slots", "running", "busy_fraction"}], "workers": {...}, "memory": {...}, "admission": {...} or null}.
struct ServiceSources {
  JobStore* store = nullptr;
  std::function<nlohmann::json()> live;
};
void RegisterServiceRoutes(httplib::Server& svr, ServiceSources sources);

// The run folders under some roots: a root that is a run folder is one run, otherwise each of its sub-folders
// that is one (grade/run_folder.h). A run's id is its folder name (made unique with "-2", "-3", ...). Folders are
// listed again on every call, so runs that appear while serving show up; report data and trajectories are cached
// until one of the run's files changes (size or modification time).
class RunCatalog {
 public:
  explicit RunCatalog(std::vector<std::string> roots);
  std::vector<std::pair<std::string, grade::RunFolder>> List() const;
  // NotFound for an unknown id; InvalidArgument for a source the run does not have.
  Status ReportData(const std::string& id, const std::string& source, nlohmann::json* out);
  Status Trajectories(const std::string& id, const std::string& source, std::vector<nlohmann::json>* out);

 private:
  struct Cached {
    std::string stamp;
    nlohmann::json data;
    std::vector<nlohmann::json> trajectories;
  };
  Status Find(const std::string& id, grade::RunFolder* out) const;
  Status Load(const std::string& id, const std::string& source, Cached* out);

  std::vector<std::string> roots_;
  std::mutex mu_;
  std::map<std::string, Cached> cache_;  // by run path + source
};
void RegisterRunRoutes(httplib::Server& svr, RunCatalog* runs);

// The run view as one self-contained HTML file (Chart.js, the page's code and `report_data` inline; nothing is
// fetched), for `kgym grade --report x.html`. `report_data` is grade::RunReportData's object.
std::string StandalonePage(const nlohmann::json& report_data, const std::string& title);

}  // namespace kgym::dashboard
