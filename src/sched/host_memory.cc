#include "sched/host_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kgym {

namespace {

// The value of a "Key:   123 kB" line of a /proc status-like file, in bytes; 0 if absent.
uint64_t ProcField(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::istringstream in(line.substr(key.size() + 1));
    uint64_t v = 0;
    std::string unit;
    if (!(in >> v)) return 0;
    in >> unit;
    return unit == "kB" ? v * 1024 : v;
  }
  return 0;
}

// A file holding one number (cgroup memory.max etc.); 0 for "max", absent or unreadable.
uint64_t NumberFile(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return 0;
  try {
    return std::stoull(s);
  } catch (...) {
    return 0;
  }
}

// This process's cgroup path for `controller` ("" = the v2 unified hierarchy), from /proc/self/cgroup.
std::string CgroupPath(const std::string& controller) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controller.empty() ? ctrls.empty() : ("," + ctrls + ",").find("," + controller + ",") != std::string::npos)
      return path;
  }
  return "";
}

}  // namespace

uint64_t MemAvailableBytes() { return ProcField("/proc/meminfo", "MemAvailable"); }

uint64_t CgroupAvailableBytes() {
  // v2: the process's own cgroup (inside a container that is often "/", i.e. the mount root).
  for (const std::string& dir : {"/sys/fs/cgroup" + CgroupPath(""), std::string("/sys/fs/cgroup")}) {
    uint64_t max = NumberFile(dir + "/memory.max");
    if (max > 0) {
      uint64_t cur = NumberFile(dir + "/memory.current");
      return max > cur ? max - cur : 1;
    }
  }
  // v1: a limit of (close to) 2^63 means none.
  for (const std::string& dir :
       {"/sys/fs/cgroup/memory" + CgroupPath("memory"), std::string("/sys/fs/cgroup/memory")}) {
    uint64_t max = NumberFile(dir + "/memory.limit_in_bytes");
    if (max > 0 && max < (uint64_t{1} << 60)) {
      uint64_t cur = NumberFile(dir + "/memory.usage_in_bytes");
      return max > cur ? max - cur : 1;
    }
  }
  return 0;
}

uint64_t DefaultMemoryBudget(double fraction) {
  uint64_t avail = MemAvailableBytes(), cg = CgroupAvailableBytes();
  if (cg > 0) avail = avail > 0 ? std::min(avail, cg) : cg;
  return static_cast<uint64_t>(static_cast<double>(avail) * fraction);
}

std::string FormatGB(uint64_t bytes) {
  char buf[32];
  if (bytes >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

}  // namespace kgym
