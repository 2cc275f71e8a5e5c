#include "sandbox/freezer.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "sandbox/process_stats.h"

namespace kgym {

namespace {

using SteadyClock = std::chrono::steady_clock;

bool WriteFile(const std::string& path, const char* text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t n = std::strlen(text);
  const bool ok = ::write(fd, text, n) == static_cast<ssize_t>(n);
  ::close(fd);
  return ok;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// This process's cgroup v2 directory: the cgroup2 mount (/proc/self/mountinfo) joined with the path in the "0::" line
// of /proc/self/cgroup. "" when there is no cgroup v2 hierarchy.
std::string OwnCgroupDir() {
  std::string mount, mount_root;
  std::ifstream info("/proc/self/mountinfo");
  for (std::string line; std::getline(info, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, dev, root, point;
    head >> id >> parent >> dev >> root >> point;
    mount = point;
    mount_root = root;
    break;
  }
  if (mount.empty()) return "";
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    if (mount_root != "/" && path.rfind(mount_root, 0) == 0) path = path.substr(mount_root.size());
    if (path == "/") path.clear();
    return mount + path;
  }
  return "";
}

struct CgroupRoot {
  std::string dir;  // "" = none
  std::atomic<uint64_t> next{0};
};

CgroupRoot& Root() {
  static CgroupRoot root;
  return root;
}

// Removes a root and its workers' directories, those that are empty (rmdir refuses the others).
void RemoveTree(const std::string& root) {
  if (DIR* d = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] == 'w') ::rmdir((root + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  ::rmdir(root.c_str());
}

// At exit: a worker whose session outlived the evaluator (a spare at a server's end) leaves an empty directory.
void RemoveRoot() {
  if (!Root().dir.empty()) RemoveTree(Root().dir);
}

// The roots of supervisors that are gone (killed before their exit could remove them).
void SweepDeadRoots(const std::string& own) {
  DIR* d = ::opendir(own.c_str());
  if (!d) return;
  std::vector<std::string> dead;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (e->d_type != DT_DIR || name.rfind("kgym-", 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + 5, &end, 10);
    if (pid > 0 && *end == '\0' && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) dead.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : dead) RemoveTree(own + "/" + name);
}

// A directory of this process's own under its cgroup, in which a probe child accepts cgroup.freeze.
std::string MakeCgroupRoot() {
  const std::string own = OwnCgroupDir();
  if (own.empty()) return "";
  SweepDeadRoots(own);
  const std::string root = own + "/kgym-" + std::to_string(::getpid());
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) return "";
  const std::string probe = root + "/probe";
  ::mkdir(probe.c_str(), 0755);
  const bool ok = WriteFile(probe + "/cgroup.freeze", "0");
  ::rmdir(probe.c_str());
  if (!ok) {
    ::rmdir(root.c_str());
    return "";
  }
  return root;
}

FreezeMode Decide(std::string* root) {
  const char* env = std::getenv("KGYM_FREEZER");
  const std::string want = env ? env : "";
  if (want == "off") return FreezeMode::kOff;
  if (want != "signals") {
    *root = MakeCgroupRoot();
    if (!root->empty()) {
      std::atexit(RemoveRoot);
      return FreezeMode::kCgroup;
    }
  }
  return FreezeMode::kSignals;
}

// State letter of a process's main thread (/proc/PID/stat), or 'X' when it is gone.
char ProcessState(pid_t pid) {
  const std::string s = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() ? s[close + 2] : 'X';
}

// `pid` and every process below it: each thread may have forked, so every thread's children are read.
std::vector<pid_t> ProcessTree(pid_t pid) {
  std::vector<pid_t> out = {pid};
  for (size_t i = 0; i < out.size() && out.size() < 4096; ++i)
    for (pid_t tid : ThreadIds(out[i])) {
      std::ifstream f("/proc/" + std::to_string(out[i]) + "/task/" + std::to_string(tid) + "/children");
      for (pid_t c; f >> c;) out.push_back(c);
    }
  return out;
}

bool Stopped(char state) { return state == 'T' || state == 't' || state == 'Z' || state == 'X'; }

}  // namespace

const char* FreezeModeName(FreezeMode m) {
  switch (m) {
    case FreezeMode::kOff:
      return "off";
    case FreezeMode::kSignals:
      return "signals";
    case FreezeMode::kCgroup:
      return "cgroup";
  }
  return "off";
}

FreezeMode DefaultFreezeMode(std::string* root) {
  static std::once_flag once;
  static FreezeMode mode = FreezeMode::kOff;
  std::call_once(once, [] { mode = Decide(&Root().dir); });
  if (root) *root = Root().dir;
  return mode;
}

void KillWorkerCgroups() {
  if (DefaultFreezeMode() != FreezeMode::kCgroup) return;
  const std::string root = Root().dir;
  std::vector<std::string> dirs;
  if (DIR* d = ::opendir(root.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] == 'w') dirs.push_back(root + "/" + e->d_name);
    ::closedir(d);
  }
  for (const auto& dir : dirs) {
    if (WriteFile(dir + "/cgroup.kill", "1")) continue;
    std::istringstream procs(ReadFile(dir + "/cgroup.procs"));
    for (pid_t p; procs >> p;) ::kill(p, SIGKILL);
  }
  for (int i = 0; i < 100; ++i) {
    RemoveTree(root);
    if (::access(root.c_str(), F_OK) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string NewWorkerCgroup() {
  if (DefaultFreezeMode() != FreezeMode::kCgroup) return "";
  const std::string dir = Root().dir + "/w" + std::to_string(Root().next++);
  return ::mkdir(dir.c_str(), 0755) == 0 ? dir : "";
}

WorkerFreezer::WorkerFreezer(pid_t pid, std::string cgroup) : pid_(pid), cgroup_(std::move(cgroup)) {}

WorkerFreezer::~WorkerFreezer() {
  Thaw();
  if (cgroup_.empty()) return;
  // The worker's processes leave the cgroup as they exit; its init's children may outlive the outside process by a
  // moment.
  for (int i = 0; i < 100 && ::rmdir(cgroup_.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

bool WorkerFreezer::frozen() const {
  std::lock_guard<std::mutex> l(mu_);
  return frozen_;
}

bool WorkerFreezer::Freeze() {
  StartFreeze();
  return AwaitFrozen(SteadyClock::now() + std::chrono::microseconds(kFreezeWaitUs));
}

void WorkerFreezer::StartFreeze() {
  std::lock_guard<std::mutex> l(mu_);
  if (frozen_ || pid_ <= 0) return;
  frozen_ = true;
  if (cgroup_.empty())
    SignalTree();
  else if (!WriteFile(cgroup_ + "/cgroup.freeze", "1"))
    cgroup_write_failed_ = true;
}

bool WorkerFreezer::AwaitFrozen(SteadyClock::time_point until) {
  std::lock_guard<std::mutex> l(mu_);
  if (!frozen_) return false;
  if (!cgroup_.empty()) {
    if (cgroup_write_failed_) return false;
    while (ReadFile(cgroup_ + "/cgroup.events").find("frozen 1") == std::string::npos) {
      if (SteadyClock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return true;
  }
  for (pid_t p : stopped_)
    while (!Stopped(ProcessState(p))) {
      if (SteadyClock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  return true;
}

// SIGSTOP to the worker's process group, in one call, then to every process of its tree, until a walk finds none it
// has not stopped (one that forked meanwhile).
void WorkerFreezer::SignalTree() {
  ::kill(-pid_, SIGSTOP);
  for (int round = 0; round < 8; ++round) {
    bool more = false;
    for (pid_t p : ProcessTree(pid_))
      if (stopped_.insert(p).second) {
        ::kill(p, SIGSTOP);
        more = true;
      }
    if (!more) break;
  }
}

void WorkerFreezer::Thaw() {
  std::lock_guard<std::mutex> l(mu_);
  if (!frozen_) return;
  frozen_ = false;
  cgroup_write_failed_ = false;
  if (!cgroup_.empty()) {
    WriteFile(cgroup_ + "/cgroup.freeze", "0");
    return;
  }
  ::kill(-pid_, SIGCONT);
  for (pid_t p : stopped_) ::kill(p, SIGCONT);
  stopped_.clear();
}

}  // namespace kgym
