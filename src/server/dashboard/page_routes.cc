// The page's own files and GET /v1/ui.
#include "server/dashboard/assets.h"
#include "server/dashboard/dashboard.h"

namespace kgym::dashboard {

namespace {
// The page's scripts and styles come from this server only; data is shown as text, and this policy keeps a
// script that slipped into the page anyway from running (no inline scripts).
constexpr const char* kPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

void SendAsset(const Asset& a, httplib::Response& res) {
  res.set_header("Content-Security-Policy", kPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(a.data), std::string(a.content_type));
}
}  // namespace

bool WantsHtml(const httplib::Request& req) {
  return req.get_header_value("Accept").find("text/html") != std::string::npos;
}

void SendPage(httplib::Response& res) { SendAsset(*FindAsset("index.html"), res); }

void RegisterPageRoutes(httplib::Server& svr, const std::vector<std::string>& features) {
  svr.Get("/dashboard", [](const httplib::Request&, httplib::Response& res) { SendPage(res); });
  svr.Get(R"(/assets/([A-Za-z0-9_.\-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const Asset* a = FindAsset(req.matches[1].str());
    if (!a) {
      res.status = 404;
      res.set_content("{\"detail\":\"no such asset\"}", "application/json");
      return;
    }
    SendAsset(*a, res);
  });
  nlohmann::json ui = {{"features", features}};
  svr.Get("/v1/ui",
          [ui](const httplib::Request&, httplib::Response& res) { res.set_content(ui.dump(), "application/json"); });
}

}  // namespace kgym::dashboard
