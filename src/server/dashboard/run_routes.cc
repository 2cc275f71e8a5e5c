// The routes of run folders: the list, one run's report data, a page of its trajectories, one trajectory.
#include "server/dashboard/dashboard.h"
#include "server/dashboard/json_reply.h"

namespace kgym::dashboard {

namespace {
using nlohmann::json;

void ReplyStatus(httplib::Response& res, const Status& s) {
  ReplyDetail(res,
              s.code() == Status::Code::kNotFound          ? 404
              : s.code() == Status::Code::kInvalidArgument ? 400
                                                           : 500,
              s.message());
}
}  // namespace

void RegisterRunRoutes(httplib::Server& svr, RunCatalog* runs) {
  svr.Get("/v1/runs", [runs](const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    for (const auto& [id, run] : runs->List())
      list.push_back(
          {{"id", id}, {"name", run.name}, {"path", run.path}, {"kind", run.kind}, {"sources", run.sources}});
    Reply(res, 200, {{"runs", list}});
  });
  svr.Get(R"(/v1/runs/([^/]+))", [runs](const httplib::Request& req, httplib::Response& res) {
    json data;
    Status s = runs->ReportData(req.matches[1], req.get_param_value("source"), &data);
    if (!s.ok()) return ReplyStatus(res, s);
    Reply(res, 200, data);
  });
  svr.Get(R"(/v1/runs/([^/]+)/trajectories)", [runs](const httplib::Request& req, httplib::Response& res) {
    std::vector<json> all;
    Status s = runs->Trajectories(req.matches[1], req.get_param_value("source"), &all);
    if (!s.ok()) return ReplyStatus(res, s);
    const std::string q = req.get_param_value("q");
    const auto offset = static_cast<size_t>(NumberParam(req, "offset", 0, 0, 1e12));
    const auto limit = static_cast<size_t>(NumberParam(req, "limit", 50, 1, 500));
    json page = json::array();
    size_t total = 0;
    for (const auto& rec : all) {
      if (!q.empty() && rec.value("key", "").find(q) == std::string::npos) continue;
      if (total >= offset && page.size() < limit) page.push_back(grade::TrajectorySummary(rec));
      ++total;
    }
    Reply(res, 200, {{"total", total}, {"offset", offset}, {"limit", limit}, {"trajectories", page}});
  });
  svr.Get(R"(/v1/runs/([^/]+)/trajectory)", [runs](const httplib::Request& req, httplib::Response& res) {
    std::vector<json> all;
    Status s = runs->Trajectories(req.matches[1], req.get_param_value("source"), &all);
    if (!s.ok()) return ReplyStatus(res, s);
    const std::string key = req.get_param_value("key");
    for (const auto& rec : all)
      if (rec.value("key", "") == key) return Reply(res, 200, rec);
    ReplyDetail(res, 404, "no trajectory with key '" + key + "'");
  });
}

}  // namespace kgym::dashboard
