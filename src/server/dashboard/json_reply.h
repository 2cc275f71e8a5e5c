// Internal to src/server/dashboard: JSON answers and query parameters of the dashboard's routes.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace kgym::dashboard {

inline void Reply(httplib::Response& res, int code, const nlohmann::json& body) {
  res.status = code;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

inline void ReplyDetail(httplib::Response& res, int code, const std::string& detail) {
  Reply(res, code, {{"detail", detail}});
}

// A numeric query parameter clamped to [lo, hi]; `def` when absent or not a number.
inline double NumberParam(const httplib::Request& req, const char* name, double def, double lo, double hi) {
  if (!req.has_param(name)) return def;
  const std::string v = req.get_param_value(name);
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || x != x) return def;
  return std::min(hi, std::max(lo, x));
}

}  // namespace kgym::dashboard
