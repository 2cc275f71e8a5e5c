#include "sandbox/process_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kgym {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int ProcessThreads(pid_t pid) {
  if (pid <= 0) return -1;
  std::string s = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = s.rfind(')');  // the command name may hold spaces and parentheses: fields start after the last ')'
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 1));
  std::string field;
  // Fields after the name: state(3) ppid(4) ... num_threads(20).
  for (int i = 3; i <= 20; ++i)
    if (!(in >> field)) return -1;
  char* end = nullptr;
  long n = std::strtol(field.c_str(), &end, 10);
  return end != field.c_str() && *end == '\0' ? static_cast<int>(n) : -1;
}

std::set<pid_t> ThreadIds(pid_t pid) {
  std::set<pid_t> out;
  if (pid <= 0) return out;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (tid > 0 && *end == '\0') out.insert(static_cast<pid_t>(tid));
  }
  ::closedir(d);
  return out;
}

namespace {

// Read while the timing lock is held (eval/process_watch.h): plain system calls, no streams. The text of
// /proc/PID/task/TID/FILE into buf (NUL-terminated), or false.
bool ReadThreadFile(pid_t pid, pid_t tid, const char* file, char* buf, size_t size) {
  if (pid <= 0 || tid <= 0) return false;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/%s", static_cast<int>(pid), static_cast<int>(tid), file);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // the thread ended
  const ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

}  // namespace

int64_t ThreadRunNs(pid_t pid, pid_t tid) {
  char buf[96];
  if (!ReadThreadFile(pid, tid, "schedstat", buf, sizeof buf)) return -1;
  char* end = nullptr;
  const long long ns = std::strtoll(buf, &end, 10);
  return end != buf ? ns : -1;
}

std::map<pid_t, int64_t> ThreadCpuNs(pid_t pid) {
  std::map<pid_t, int64_t> out;
  for (pid_t tid : ThreadIds(pid))
    if (int64_t ns = ThreadRunNs(pid, tid); ns >= 0) out[tid] = ns;
  return out;
}

int64_t ProcessCpuNs(pid_t pid) {
  if (pid <= 0) return -1;
  clockid_t clock;
  timespec ts{};
  if (::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &ts) == 0)
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  std::map<pid_t, int64_t> threads = ThreadCpuNs(pid);
  if (threads.empty()) return -1;
  int64_t total = 0;
  for (const auto& [tid, ns] : threads) total += ns;
  return total;
}

int RunnableThreads(pid_t pid) {
  const std::set<pid_t> ids = ThreadIds(pid);
  if (ids.empty()) return -1;  // a live process has a thread
  int n = 0;
  char buf[512];
  for (pid_t tid : ids) {
    if (!ReadThreadFile(pid, tid, "stat", buf, sizeof buf)) continue;
    const char* close = std::strrchr(buf, ')');  // the name may hold spaces and parentheses; the state follows it
    if (close && close[1] == ' ' && close[2] == 'R') ++n;
  }
  return n;
}

int64_t SettledProcessCpuNs(pid_t pid, int max_wait_us, bool* unsettled) {
  timespec t0{}, now{};
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (RunnableThreads(pid) <= 0) break;  // read now, every thread's time is accounted
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) * 1000000LL + (now.tv_nsec - t0.tv_nsec) / 1000 >= max_wait_us) {
      if (unsettled) *unsettled = true;
      break;
    }
    const timespec pause{0, 50000};
    ::nanosleep(&pause, nullptr);
  }
  return ProcessCpuNs(pid);
}

std::vector<pid_t> ChildProcesses(pid_t pid) {
  std::vector<pid_t> out;
  std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  std::ifstream f(path);
  if (f) {
    for (pid_t c; f >> c;) out.push_back(c);
    return out;
  }
  // Fallback: every /proc/N/stat whose parent field is pid.
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long n = std::strtol(e->d_name, &end, 10);
      if (n <= 0 || *end != '\0') continue;
      std::string st = ReadSmallFile(std::string("/proc/") + e->d_name + "/stat");
      size_t close = st.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream in(st.substr(close + 1));
      std::string state;
      long ppid = 0;
      if (in >> state >> ppid && ppid == pid) out.push_back(static_cast<pid_t>(n));
    }
    ::closedir(d);
  }
  return out;
}

uint64_t ProcessPeakPrivateBytes(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  uint64_t hwm = 0, file = 0;
  for (std::string line; std::getline(f, line);) {
    uint64_t* into = line.rfind("VmHWM:", 0) == 0 ? &hwm : line.rfind("RssFile:", 0) == 0 ? &file : nullptr;
    if (into) *into = std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10) * 1024;  // "NNN kB"
  }
  return hwm > file ? hwm - file : hwm;
}

}  // namespace kgym
