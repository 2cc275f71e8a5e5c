#include "server/dashboard/gpu_probe.h"

#include <cstdio>
#include <sstream>
#include <vector>

namespace kgym::dashboard {

namespace {
std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

nlohmann::json Number(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return s.empty() || *end != '\0' ? nlohmann::json() : nlohmann::json(v);
}
}  // namespace

nlohmann::json ParseNvidiaSmi(const std::string& csv) {
  nlohmann::json out = nlohmann::json::array();
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) f.push_back(Trim(cell));
    if (f.size() != 6 || f[0].empty() || f[0].find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back({{"device", "cuda:" + f[0]},
                   {"name", f[1]},
                   {"memory_used_mib", Number(f[2])},
                   {"memory_total_mib", Number(f[3])},
                   {"utilization_percent", Number(f[4])},
                   {"temperature_c", Number(f[5])}});
  }
  return out;
}

nlohmann::json GpuProbe::Read() {
  std::lock_guard<std::mutex> l(mu_);
  auto now = std::chrono::steady_clock::now();
  if (read_at_.time_since_epoch().count() != 0 && now - read_at_ < std::chrono::seconds(5)) return last_;
  read_at_ = now;
  std::string text;
  if (FILE* p = ::popen("timeout 3 nvidia-smi --query-gpu=index,name,memory.used,memory.total,utilization.gpu,"
                        "temperature.gpu --format=csv,noheader,nounits 2>/dev/null",
                        "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    ::pclose(p);
  }
  last_ = ParseNvidiaSmi(text);
  return last_;
}

}  // namespace kgym::dashboard
