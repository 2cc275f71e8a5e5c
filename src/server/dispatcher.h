// Dispatcher: where the server sends accepted jobs. LocalDispatcher runs them in this process through a
// Scheduler; RedisDispatcher enqueues them in Redis for `kgym worker` processes and collects their results.
// Both report back through a SchedulerListener (the EvaluationService), exactly once per job generation.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "sched/admission.h"
#include "sched/scheduler.h"

namespace kgym {

struct DispatchStats {
  SchedulerStats sched;                               // local mode: everything; redis mode: queued/running from Redis
  nlohmann::json workers = nlohmann::json::object();  // worker id -> {device, status, last_heartbeat, ...}
  std::optional<AdmissionStats> memory;               // local mode with a memory budget (sched/admission.h)
};

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  virtual Status Start(SchedulerListener* listener) = 0;
  // Hands a job on. A dispatcher whose queue is out of reach (Redis down) keeps the job for when it is back and
  // returns Ok: the job is stored, so it is not lost meanwhile.
  virtual Status Dispatch(const SchedJob& job) = 0;
  // Every job the store holds unfinished, for a dispatcher whose queue may lose jobs (a Redis that restarted empty):
  // it hands them to the queue again (each generation is queued at most once). Set before Start().
  virtual void SetUnfinishedSource(std::function<std::vector<SchedJob>()> source) { (void)source; }
  // True if the job was queued or running (its final result arrives through the listener, as cancelled).
  virtual bool Cancel(const std::string& id) = 0;
  // Stops starting jobs and waits up to timeout_s for running ones; returns how many are still running.
  virtual int Drain(double timeout_s) = 0;
  virtual void Stop() = 0;
  virtual DispatchStats Stats() = 0;
};

std::unique_ptr<Dispatcher> NewLocalDispatcher(Evaluator* evaluator, SchedulerOptions options);

// Every node may reap expired leases; the API node does it every reap_interval_s.
std::unique_ptr<Dispatcher> NewRedisDispatcher(const std::string& redis_url, const std::string& prefix,
                                               double reap_interval_s = 1.0);

}  // namespace kgym
