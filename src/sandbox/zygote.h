// Zygote: a warm Python process (python/kgym_harness/zygote.py) that has imported torch but never touched CUDA,
// and forks one sandboxed worker per request. Forking from it costs milliseconds instead of the seconds a
// fresh `import torch` costs.
//
// The zygote starts with a scrubbed environment (an allowlist), so nothing secret is in its memory or in
// /proc/<pid>/environ of the workers it forks. Thread-safe: Fork() and WaitExit() may be called from many
// threads. If the zygote dies, the next Fork() starts a new one; the workers it had forked die with it (they hold
// a parent-death signal) and are orphaned(): their end is never reported, and it was not their doing.
// Fork() is a fault point (fault/fault_points.h: zygote.fork).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "core/status.h"

namespace kgym {

struct ZygoteOptions {
  std::string python;                            // interpreter that can import torch
  std::string harness_path;                      // directory containing the kgym_harness package
  std::map<std::string, std::string> extra_env;  // added to the allowlisted environment
};

struct WorkerExit {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled
};

class Zygote {
 public:
  static Status Start(const ZygoteOptions& options, std::unique_ptr<Zygote>* out);
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  // Forks a worker with `spec` (role, sandbox policy). `chan_fd` and `out_fd` are handed to the worker (the
  // caller keeps and closes its own copies). On success *job identifies the worker and *pid is its host pid.
  Status Fork(const nlohmann::json& spec, int chan_fd, int out_fd, int64_t* job, pid_t* pid);

  // Waits until the zygote reports the end of `job` or the deadline passes (false); false at once for an orphaned job.
  bool WaitExit(int64_t job, std::chrono::steady_clock::time_point deadline, WorkerExit* out);
  // Whether `job` was forked by a zygote process that died before reporting its end (the worker died with it).
  bool Orphaned(int64_t job) const;

  nlohmann::json Hello() const;  // what the zygote reported at start: python version, preloaded modules
  pid_t pid() const { return pid_; }

 private:
  Zygote() = default;
  Status Launch();
  void ReaderLoop();
  void Shutdown();

  ZygoteOptions options_;
  pid_t pid_ = -1;
  int ctl_fd_ = -1;
  nlohmann::json hello_;
  std::thread reader_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool dead_ = false;
  int64_t next_job_ = 1;
  std::map<int64_t, pid_t> forked_;        // job -> pid, once "forked" arrived
  std::map<int64_t, std::string> errors_;  // job -> fork error
  std::map<int64_t, WorkerExit> exits_;    // job -> exit report
  std::set<int64_t> running_;              // forked, end not reported yet
  std::set<int64_t> orphaned_;             // running when their zygote died
  std::mutex send_mu_;
};

}  // namespace kgym
