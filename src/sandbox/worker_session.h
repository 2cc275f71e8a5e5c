// WorkerSession: the supervisor's side of one sandboxed worker process forked from the zygote, with its private
// channel and its captured output. The session, not the worker, owns the clock: every deadline is enforced here, and
// a worker that dies is noticed at once through EOF on its channel.
//
// A session can freeze its worker (sandbox/freezer.h: a timed hold on the worker's device stops it). Frozen time is
// not the worker's: every deadline handed to Recv/RecvReply is moved later by the time the worker spent frozen, and
// none passes while it is frozen, so a worker stopped for other evaluations' holds never times out for it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "sandbox/channel.h"
#include "sandbox/freezer.h"
#include "sandbox/output_capture.h"
#include "sandbox/process_stats.h"
#include "sandbox/zygote.h"

namespace kgym {

class WorkerSession : public Freezable {
 public:
  // Forks a worker with `spec` ({"role", "policy"}) and reads its hello (bounded by `deadline`). Where workers are
  // frozen through cgroups, the policy gets the worker's cgroup ("cgroup"), which its outside process joins first.
  // `on_forked`, when set, is called with the session once its process exists and can be frozen, before its hello (the
  // evaluator enlists it on its device's timing lock there, so a timed hold also stops a worker still making its
  // CUDA context: context creation beside timed calls slowed them, eval/spare_pool.h).
  static Status Start(Zygote* zygote, const nlohmann::json& spec, Clock::time_point deadline,
                      std::unique_ptr<WorkerSession>* out,
                      const std::function<void(WorkerSession*)>& on_forked = nullptr);
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

  // Stops every process of the worker (sandbox/freezer.h) until Thaw(); false where the worker has no freezer
  // (KGYM_FREEZER=off) or not all of it stopped in time. Thread-safe, also while another thread talks to the worker.
  bool Freeze() override;
  void Thaw() override;
  void StartFreeze() override;  // Freeze() in two halves (sandbox/freezer.h)
  bool AwaitFrozen(std::chrono::steady_clock::time_point until) override;
  // Keeps `token` until the session ends: destroyed first thing in the destructor, while the worker still runs (the
  // evaluator's enlistment of the worker on its device's timing lock, eval/timing_lock.h).
  void KeepUntilEnd(std::shared_ptr<void> token) { end_token_ = std::move(token); }
  // The time the worker has spent frozen so far (the current freeze included).
  Clock::duration FrozenFor() const;
  // "cgroup", "signals" or "off".
  const char* freeze_mode() const { return freezer_ ? FreezeModeName(freezer_->mode()) : "off"; }

  const nlohmann::json& hello() const { return hello_; }
  // Host pid of the process that runs the harness (and the candidate's code), found from outside when the worker
  // said hello, before any candidate code ran; -1 if /proc could not tell.
  pid_t harness_pid() const { return harness_pid_; }
  // The harness process's threads when the worker said hello (empty if /proc could not tell): the harness's own,
  // made before any candidate code ran (eval/process_watch.h counts the others).
  const std::set<pid_t>& hello_threads() const { return hello_threads_; }
  nlohmann::json& evidence() { return evidence_; }
  nlohmann::json& notes() { return notes_; }
  bool killed() const { return killed_; }
  // The worker died with its zygote (sandbox/zygote.h): its end was not its doing.
  bool orphaned() const;

 private:
  WorkerSession() = default;
  // `deadline` moved later by the time spent frozen; never passed while frozen.
  Clock::time_point Due(Clock::time_point deadline) const;
  Zygote* zygote_ = nullptr;
  const std::atomic<bool>* cancel_ = nullptr;
  int64_t job_ = 0;
  // The scope of its reads' fault point (fault/fault_points.h: channel.read): "hello" for the worker's hello, then its
  // role (reference, candidate, probe).
  std::string fault_scope_ = "hello";
  pid_t pid_ = -1;
  pid_t harness_pid_ = -1;
  std::set<pid_t> hello_threads_;
  int chan_ = -1;
  bool exited_ = false, killed_ = false;
  WorkerExit exit_;
  std::unique_ptr<OutputCapture> capture_;
  nlohmann::json hello_;
  nlohmann::json evidence_ = nlohmann::json::array();
  nlohmann::json notes_ = nlohmann::json::object();
  std::unique_ptr<WorkerFreezer> freezer_;
  std::shared_ptr<void> end_token_;
  mutable std::mutex frozen_mu_;
  bool frozen_ = false;
  Clock::time_point frozen_since_;
  Clock::duration frozen_total_{0};
};

}  // namespace kgym
