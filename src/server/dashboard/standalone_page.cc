// The run view as one HTML file: the page's styles and scripts inline, the report data as a JSON script element.
#include <sstream>

#include "server/dashboard/assets.h"
#include "server/dashboard/dashboard.h"

namespace kgym::dashboard {

namespace {
std::string EscapeHtml(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o += c;
  }
  return o;
}

// JSON inside <script type="application/json">: a "</script" in a string would end the element, so every '<' is
// written as the JSON escape \u003c (in JSON a '<' can only stand inside a string).
std::string ScriptSafeJson(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string o;
  o.reserve(text.size());
  for (char c : text) o += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return o;
}

std::string Inline(const char* name) {
  const Asset* a = FindAsset(name);
  return a ? std::string(a->data) : std::string();
}
}  // namespace

std::string StandalonePage(const nlohmann::json& report_data, const std::string& title) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << EscapeHtml(title)
    << "</title><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<link rel=\"icon\" href=\"data:,\"><style>\n"
    << Inline("app.css") << "\n</style></head>\n<body class=\"report\">\n<header><h1>" << EscapeHtml(title)
    << "</h1><span class=\"muted\">kgym report, readable offline</span></header>\n<main id=\"app\"></main>\n"
    << "<script type=\"application/json\" id=\"kgym-report\">" << ScriptSafeJson(report_data) << "</script>\n";
  for (const char* js : {"chart.min.js", "kgym_core.js", "kgym_runs.js"})
    o << "<script>\n" << Inline(js) << "\n</script>\n";
  o << "<script>kgym.startReport(document.getElementById('kgym-report'));</script>\n</body></html>\n";
  return o.str();
}

}  // namespace kgym::dashboard
