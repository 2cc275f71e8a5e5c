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
// The connection is made again on the next call after it broke (Redis restarted, the network dropped it): a call
// that fails for want of Redis returns Unavailable and changes nothing the caller knows of; the caller tries again
// later. connections() counts the connections made, so a caller can tell that Redis may have restarted (and lost
// what it held: without persistence a restarted Redis is empty) and hand it again what it must hold.
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
  // Parses the URL and connects; Unavailable when Redis cannot be reached (InvalidArgument for a bad URL).
  static Status Connect(const std::string& url, const std::string& prefix, std::unique_ptr<RedisJobQueue>* out);
  // Parses the URL only; the connection is made at the first call.
  static Status Open(const std::string& url, const std::string& prefix, std::unique_ptr<RedisJobQueue>* out);
  ~RedisJobQueue();

  // Connections made so far (0 before the first).
  int64_t connections() const { return connections_; }
  const std::string& url() const { return url_; }

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
  RedisJobQueue(std::string url, RedisAddress address, std::string prefix);
  struct Reply;
  Status Reconnect();
  // `fault`: the fault point this command may be dropped at (fault/fault_points.h).
  Status Run(const std::vector<std::string>& argv, Reply* reply, double timeout_s = 0,
             const char* fault = "redis.command");
  Status Eval(const char* script, const std::vector<std::string>& keys, const std::vector<std::string>& args,
              Reply* reply, const char* fault = "redis.command");

  redisContext* ctx_ = nullptr;
  std::string url_;
  RedisAddress address_;
  std::string prefix_;
  int64_t connections_ = 0;
};

}  // namespace kgym
