// RedisJobQueue: the shared job queue used when kgym runs on many nodes. The API node enqueues jobs;
// `kgym worker` processes on GPU nodes claim them under a lease that they renew with heartbeats; a job whose
// lease expires (its worker died) goes back to the queue; a finished job's result waits in a "done" list until
// the API node has written it to its own store (JobStore) and acknowledged it.
//
// Keys (prefix "kgym" by default): {p}:job:{id} hash (payload, generation, priority, state, owner, attempts,
// cancel, result), {p}:queue sorted set (score orders high > normal > low, then FIFO), {p}:leases sorted set
// (id -> lease expiry in ms), {p}:done and {p}:done:pending lists of "generation|id". Every state change is one
// Lua script, so it is atomic on the Redis server.
//
// Not thread-safe: one RedisJobQueue (one connection) per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

struct redisContext;

namespace kgym {

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
};

// Parses redis://HOST[:PORT][/DB].
Status ParseRedisUrl(const std::string& url, RedisAddress* out);

struct ClaimedJob {
  std::string id;
  int64_t generation = 0;
  std::string payload;  // the request JSON as enqueued
  int attempts = 0;     // claims so far, this one included
};

struct FinishedJob {
  std::string id;
  int64_t generation = 0;
  std::string result_json;
  std::string token;  // pass to Acknowledge()
};

enum class LeaseState { kHeld, kCancelRequested, kLost };

class RedisJobQueue {
 public:
  static Status Connect(const std::string& url, const std::string& prefix, std::unique_ptr<RedisJobQueue>* out);
  ~RedisJobQueue();

  // Enqueues generation `generation` of job `id` unless that generation is already queued, running or done
  // in Redis (*enqueued tells which). Priority: 0 low, 1 normal, 2 high.
  Status Enqueue(const std::string& id, int64_t generation, int priority, const std::string& payload, bool* enqueued);

  // Takes the best queued job and leases it to `worker` for lease_ms. nullopt when the queue is empty.
  Status Claim(const std::string& worker, int64_t lease_ms, std::optional<ClaimedJob>* job);

  // Renews the lease. kLost when the lease expired and the job went back to the queue (or was superseded).
  Status Heartbeat(const std::string& id, const std::string& worker, int64_t lease_ms, LeaseState* state);

  // Records the result if `worker` still holds the lease on that generation (*accepted); otherwise the
  // result is dropped, so each generation completes exactly once.
  Status Complete(const std::string& id, const std::string& worker, int64_t generation, const std::string& result,
                  bool* accepted);

  // Re-queues every job whose lease has expired. Safe to call from any node at any time.
  Status ReapExpiredLeases(int* requeued);

  // Cancels: a queued job is removed from the queue (*was_queued); a running one is flagged so its worker's
  // next heartbeat sees kCancelRequested. *generation (optional) is the generation that was cancelled.
  Status Cancel(const std::string& id, bool* was_queued, bool* was_running, int64_t* generation = nullptr);

  // Blocks up to timeout_s for a finished job. The job stays in {p}:done:pending until Acknowledge(), and
  // RecoverUnacknowledged() re-delivers whatever an API node took but never acknowledged before it died.
  Status NextFinished(double timeout_s, std::optional<FinishedJob>* job);
  Status Acknowledge(const FinishedJob& job);
  Status RecoverUnacknowledged(int* moved);

  Status QueueDepth(int64_t* queued, int64_t* leased);

 private:
  RedisJobQueue(redisContext* ctx, std::string prefix);
  struct Reply;
  Status Run(const std::vector<std::string>& argv, Reply* reply, double timeout_s = 0);
  Status Eval(const char* script, const std::vector<std::string>& keys, const std::vector<std::string>& args,
              Reply* reply);

  redisContext* ctx_;
  std::string prefix_;
};

}  // namespace kgym
