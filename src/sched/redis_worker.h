// RedisWorker: the body of `kgym worker`. It claims jobs from the shared RedisJobQueue while its local
// Scheduler has a free slot, evaluates them there (so retries, deadlines and per-device slots behave exactly as
// in `kgym serve`), renews each job's lease with heartbeats, and hands results back to Redis. A cancel
// requested through the API reaches the evaluation through the heartbeat; a lease this worker lost (it was
// paused too long and the job went to another worker) stops the local evaluation and its result is dropped.
// If the process dies, its leases expire and any node's reaper puts the jobs back in the queue.
//
// Redis out of reach is waited out: claims are tried again, a result Redis did not take is kept (its job's lease
// renewed once Redis answers) and delivered later; a lease found lost (Redis restarted empty, or it expired while
// the heartbeats failed) stops the local evaluation, whose result would be refused.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "sched/scheduler.h"

namespace kgym {

struct RedisWorkerOptions {
  std::string redis_url;
  std::string prefix = "kgym";
  std::string worker_id;  // "" = hostname:pid
  std::vector<DeviceSlots> devices;
  int64_t lease_ms = 30000;  // a job is re-queued this long after its worker's last heartbeat
  int64_t heartbeat_ms = 0;  // 0 = lease_ms / 3
  int64_t poll_ms = 50;      // idle wait between claims
  int max_retries = 2;
  double retry_backoff_s = 1.0;
};

class RedisWorker {
 public:
  RedisWorker(Evaluator* evaluator, RedisWorkerOptions options);
  // Runs until *stop becomes true, then stops claiming and lets running jobs finish (graceful drain) until
  // drain_timeout_s has passed or *cut_short (may be null) becomes true; evaluations still running then are stopped
  // and their jobs, like any whose result Redis did not take, go back to the queue at once (*stopped, may be null,
  // counts them). Returns an error only for a bad Redis URL.
  Status Run(const std::atomic<bool>* stop, double drain_timeout_s = 1e9, const std::atomic<bool>* cut_short = nullptr,
             int* stopped = nullptr);

 private:
  Evaluator* evaluator_;
  RedisWorkerOptions options_;
};

}  // namespace kgym
