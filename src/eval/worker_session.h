// WorkerSession: one sandboxed worker process forked from the zygote, with its private channel and its captured
// output. The session, not the worker, owns the clock: every deadline is enforced here, and a worker that dies
// is noticed at once through EOF on its channel.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "eval/wire.h"
#include "sandbox/output_capture.h"
#include "sandbox/zygote.h"

namespace kgym {

class WorkerSession {
 public:
  // Forks a worker with `spec` ({"role", "policy"}) and reads its hello (bounded by `deadline`).
  static Status Start(Zygote* zygote, const nlohmann::json& spec, Clock::time_point deadline,
                      std::unique_ptr<WorkerSession>* out);
  ~WorkerSession();  // kills the worker if it is still running

  Status Send(const nlohmann::json& header, const std::string& payload = "",
              const std::vector<std::shared_ptr<const Region>>& regions = {});
  Status Recv(Clock::time_point deadline, Frame* out);
  // Receives frames until one whose "type" is not "evidence"/"note"; those are appended to evidence()/notes().
  Status RecvReply(Clock::time_point deadline, Frame* out);

  // While *cancel is true, Recv() returns Status::Unavailable("cancelled") within 200 ms.
  void SetCancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }
  bool cancelled() const { return cancel_ && cancel_->load(); }

  // True while the worker is running and has sent nothing unasked (what an idle spare must look like).
  bool Alive();
  void Kill();
  // Waits (bounded) for the worker's end; returns false if the zygote never reported it.
  bool WaitExit(Clock::time_point deadline, WorkerExit* out);
  std::string Output();  // captured stdout/stderr (bounded); complete once the worker has exited
  size_t OutputBytes();

  const nlohmann::json& hello() const { return hello_; }
  // Host pid of the process that runs the harness (and the candidate's code), found from outside when the worker
  // said hello, before any candidate code ran; -1 if /proc could not tell.
  pid_t harness_pid() const { return harness_pid_; }
  nlohmann::json& evidence() { return evidence_; }
  nlohmann::json& notes() { return notes_; }
  bool killed() const { return killed_; }

 private:
  WorkerSession() = default;
  Zygote* zygote_ = nullptr;
  const std::atomic<bool>* cancel_ = nullptr;
  int64_t job_ = 0;
  pid_t pid_ = -1;
  pid_t harness_pid_ = -1;
  int chan_ = -1;
  bool exited_ = false, killed_ = false;
  WorkerExit exit_;
  std::unique_ptr<OutputCapture> capture_;
  nlohmann::json hello_;
  nlohmann::json evidence_ = nlohmann::json::array();
  nlohmann::json notes_ = nlohmann::json::object();
};

// Number of threads of a process as the kernel reports it (/proc/PID/stat), or -1. Read from outside the process,
// so nothing the process does to its own interpreter changes the answer.
int ProcessThreads(pid_t pid);
// CPU time in nanoseconds used so far by all threads of a process (the run time of /proc/PID/task/*/schedstat),
// or -1. Threads that already ended are not counted: callers compare snapshots a call apart.
int64_t ProcessCpuNs(pid_t pid);

}  // namespace kgym
