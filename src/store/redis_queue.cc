#include "store/redis_queue.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdlib>

#include "fault/fault_points.h"

namespace kgym {

namespace {
int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

timeval Tv(double s) {
  timeval tv;
  tv.tv_sec = static_cast<long>(s);
  tv.tv_usec = static_cast<long>((s - tv.tv_sec) * 1e6);
  return tv;
}

// Score of a queued job: higher priority first, then FIFO by an ever-increasing sequence number.
// ARGV-independent helper used by the scripts: score = (2 - priority) * 1e13 + seq.
constexpr const char* kEnqueue = R"lua(
local job = KEYS[1]
local gen = tonumber(ARGV[2])
local cur = redis.call('HGET', job, 'generation')
if cur and tonumber(cur) >= gen then return 0 end
redis.call('DEL', job)
redis.call('HSET', job, 'payload', ARGV[3], 'generation', ARGV[2], 'priority', ARGV[4], 'state', 'queued',
           'owner', '', 'attempts', 0, 'cancel', 0)
redis.call('ZREM', KEYS[3], ARGV[1])
local seq = redis.call('INCR', KEYS[4])
redis.call('ZADD', KEYS[2], (2 - tonumber(ARGV[4])) * 1e13 + seq, ARGV[1])
return 1
)lua";

constexpr const char* kClaim = R"lua(
while true do
  local top = redis.call('ZPOPMIN', KEYS[1])
  if #top == 0 then return false end
  local id = top[1]
  local job = ARGV[4] .. ':job:' .. id
  if redis.call('HGET', job, 'state') == 'queued' then
    redis.call('HSET', job, 'state', 'running', 'owner', ARGV[1])
    local attempts = redis.call('HINCRBY', job, 'attempts', 1)
    redis.call('ZADD', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
    return {id, redis.call('HGET', job, 'generation'), redis.call('HGET', job, 'payload'), attempts}
  end
end
)lua";

constexpr const char* kHeartbeat = R"lua(
local job = KEYS[1]
if redis.call('HGET', job, 'state') ~= 'running' or redis.call('HGET', job, 'owner') ~= ARGV[2] then return -1 end
redis.call('ZADD', KEYS[2], 'XX', tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
return tonumber(redis.call('HGET', job, 'cancel'))
)lua";

constexpr const char* kComplete = R"lua(
local job = KEYS[1]
if redis.call('HGET', job, 'state') ~= 'running' or redis.call('HGET', job, 'owner') ~= ARGV[2]
   or redis.call('HGET', job, 'generation') ~= ARGV[3] then return 0 end
redis.call('HSET', job, 'state', 'done', 'result', ARGV[4])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('LPUSH', KEYS[3], ARGV[3] .. '|' .. ARGV[1])
return 1
)lua";

constexpr const char* kReap = R"lua(
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local n = 0
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], id)
  local job = ARGV[2] .. ':job:' .. id
  if redis.call('HGET', job, 'state') == 'running' then
    redis.call('HSET', job, 'state', 'queued', 'owner', '')
    local seq = redis.call('INCR', KEYS[3])
    local prio = tonumber(redis.call('HGET', job, 'priority') or '1')
    redis.call('ZADD', KEYS[2], (2 - prio) * 1e13 + seq, id)
    n = n + 1
  end
end
return n
)lua";

constexpr const char* kCancel = R"lua(
local job = KEYS[1]
local state = redis.call('HGET', job, 'state')
local gen = tonumber(redis.call('HGET', job, 'generation') or '0')
if state == 'queued' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HSET', job, 'state', 'cancelled')
  return {1, gen}
elseif state == 'running' then
  redis.call('HSET', job, 'cancel', 1)
  return {2, gen}
end
return {0, gen}
)lua";
}  // namespace

struct RedisJobQueue::Reply {
  redisReply* r = nullptr;
  ~Reply() {
    if (r) freeReplyObject(r);
  }
};

Status ParseRedisUrl(const std::string& url, RedisAddress* out) {
  const std::string scheme = "redis://";
  if (url.rfind(scheme, 0) != 0)
    return Status::InvalidArgument("redis URL must look like redis://HOST:PORT/DB, got '" + url + "'");
  std::string rest = url.substr(scheme.size());
  RedisAddress a;
  auto slash = rest.find('/');
  if (slash != std::string::npos) {
    std::string db = rest.substr(slash + 1);
    if (!db.empty()) a.db = std::atoi(db.c_str());
    rest = rest.substr(0, slash);
  }
  auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    a.port = std::atoi(rest.substr(colon + 1).c_str());
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) a.host = rest;
  if (a.port <= 0 || a.port > 65535) return Status::InvalidArgument("bad port in redis URL '" + url + "'");
  *out = a;
  return Status::Ok();
}

RedisJobQueue::RedisJobQueue(std::string url, RedisAddress address, std::string prefix)
    : url_(std::move(url)), address_(std::move(address)), prefix_(std::move(prefix)) {}
RedisJobQueue::~RedisJobQueue() {
  if (ctx_) redisFree(ctx_);
}

Status RedisJobQueue::Open(const std::string& url, const std::string& prefix, std::unique_ptr<RedisJobQueue>* out) {
  RedisAddress a;
  Status s = ParseRedisUrl(url, &a);
  if (!s.ok()) return s;
  out->reset(new RedisJobQueue(url, a, prefix));
  return Status::Ok();
}

Status RedisJobQueue::Connect(const std::string& url, const std::string& prefix, std::unique_ptr<RedisJobQueue>* out) {
  std::unique_ptr<RedisJobQueue> q;
  Status s = Open(url, prefix, &q);
  if (s.ok()) s = q->Reconnect();
  if (!s.ok()) return s;
  *out = std::move(q);
  return Status::Ok();
}

Status RedisJobQueue::Reconnect() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
  if (fault::Hit("redis.connect"))
    return Status::Unavailable("cannot connect to redis at " + url_ + ": Connection refused (fault point)");
  redisContext* ctx = redisConnectWithTimeout(address_.host.c_str(), address_.port, Tv(5));
  if (!ctx || ctx->err) {
    std::string msg = ctx ? ctx->errstr : "out of memory";
    if (ctx) redisFree(ctx);
    return Status::Unavailable("cannot connect to redis at " + url_ + ": " + msg);
  }
  redisSetTimeout(ctx, Tv(10));
  ctx_ = ctx;
  if (address_.db != 0) {
    Reply r;
    Status s = Run({"SELECT", std::to_string(address_.db)}, &r, 0, nullptr);
    if (!s.ok()) {
      redisFree(ctx_);
      ctx_ = nullptr;
      return s;
    }
  }
  ++connections_;
  return Status::Ok();
}

Status RedisJobQueue::Run(const std::vector<std::string>& argv, Reply* reply, double timeout_s, const char* fault) {
  // A context that saw an I/O or protocol error cannot be used again: connect afresh.
  if (!ctx_ || ctx_->err) {
    Status s = Reconnect();
    if (!s.ok()) return s;
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  // The fault: the connection drops as the command goes out, and hiredis meets it as it would a real drop.
  if (fault && fault::Hit(fault)) ::shutdown(ctx_->fd, SHUT_RDWR);
  if (timeout_s > 0) redisSetTimeout(ctx_, Tv(timeout_s + 5));
  reply->r = static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (timeout_s > 0 && !ctx_->err) redisSetTimeout(ctx_, Tv(10));
  if (!reply->r) return Status::Unavailable(std::string("redis: ") + (ctx_->err ? ctx_->errstr : "no reply"));
  if (reply->r->type == REDIS_REPLY_ERROR) return Status::Internal(std::string("redis: ") + reply->r->str);
  return Status::Ok();
}

Status RedisJobQueue::Eval(const char* script, const std::vector<std::string>& keys,
                           const std::vector<std::string>& args, Reply* reply, const char* fault) {
  std::vector<std::string> argv = {"EVAL", script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, reply, 0, fault);
}

Status RedisJobQueue::Enqueue(const std::string& id, int64_t generation, int priority, const std::string& payload,
                              bool* enqueued) {
  Reply r;
  Status s = Eval(kEnqueue, {prefix_ + ":job:" + id, prefix_ + ":queue", prefix_ + ":leases", prefix_ + ":seq"},
                  {id, std::to_string(generation), payload, std::to_string(priority)}, &r);
  if (!s.ok()) return s;
  *enqueued = r.r->integer == 1;
  return Status::Ok();
}

Status RedisJobQueue::Claim(const std::string& worker, int64_t lease_ms, std::optional<ClaimedJob>* job) {
  Reply r;
  Status s = Eval(kClaim, {prefix_ + ":queue", prefix_ + ":leases"},
                  {worker, std::to_string(NowMs()), std::to_string(lease_ms), prefix_}, &r);
  if (!s.ok()) return s;
  job->reset();
  if (r.r->type != REDIS_REPLY_ARRAY || r.r->elements != 4) return Status::Ok();
  ClaimedJob c;
  c.id.assign(r.r->element[0]->str, r.r->element[0]->len);
  c.generation = std::atoll(r.r->element[1]->str);
  c.payload.assign(r.r->element[2]->str, r.r->element[2]->len);
  c.attempts = static_cast<int>(r.r->element[3]->integer);
  *job = std::move(c);
  return Status::Ok();
}

Status RedisJobQueue::Heartbeat(const std::string& id, const std::string& worker, int64_t lease_ms, LeaseState* state) {
  Reply r;
  Status s = Eval(kHeartbeat, {prefix_ + ":job:" + id, prefix_ + ":leases"},
                  {id, worker, std::to_string(NowMs()), std::to_string(lease_ms)}, &r, "redis.lease");
  if (!s.ok()) return s;
  long long v = r.r->integer;
  *state = v < 0 ? LeaseState::kLost : (v > 0 ? LeaseState::kCancelRequested : LeaseState::kHeld);
  return Status::Ok();
}

Status RedisJobQueue::Complete(const std::string& id, const std::string& worker, int64_t generation,
                               const std::string& result, bool* accepted) {
  Reply r;
  Status s = Eval(kComplete, {prefix_ + ":job:" + id, prefix_ + ":leases", prefix_ + ":done"},
                  {id, worker, std::to_string(generation), result}, &r);
  if (!s.ok()) return s;
  *accepted = r.r->integer == 1;
  return Status::Ok();
}

Status RedisJobQueue::ReapExpiredLeases(int* requeued) {
  Reply r;
  Status s =
      Eval(kReap, {prefix_ + ":leases", prefix_ + ":queue", prefix_ + ":seq"}, {std::to_string(NowMs()), prefix_}, &r);
  if (!s.ok()) return s;
  *requeued = static_cast<int>(r.r->integer);
  return Status::Ok();
}

Status RedisJobQueue::Cancel(const std::string& id, bool* was_queued, bool* was_running, int64_t* generation) {
  Reply r;
  Status s = Eval(kCancel, {prefix_ + ":job:" + id, prefix_ + ":queue"}, {id}, &r);
  if (!s.ok()) return s;
  if (r.r->type != REDIS_REPLY_ARRAY || r.r->elements != 2) return Status::Internal("redis: unexpected cancel reply");
  long long code = r.r->element[0]->integer;
  *was_queued = code == 1;
  *was_running = code == 2;
  if (generation) *generation = r.r->element[1]->integer;
  return Status::Ok();
}

Status RedisJobQueue::NextFinished(double timeout_s, std::optional<FinishedJob>* job) {
  job->reset();
  Reply r;
  Status s = Run({"BLMOVE", prefix_ + ":done", prefix_ + ":done:pending", "RIGHT", "LEFT", std::to_string(timeout_s)},
                 &r, timeout_s);
  if (!s.ok()) return s;
  if (r.r->type != REDIS_REPLY_STRING) return Status::Ok();
  FinishedJob f;
  f.token.assign(r.r->str, r.r->len);
  auto bar = f.token.find('|');
  f.generation = std::atoll(f.token.substr(0, bar).c_str());
  f.id = f.token.substr(bar + 1);
  Reply res;
  s = Run({"HMGET", prefix_ + ":job:" + f.id, "result", "generation"}, &res);
  if (!s.ok()) return s;
  if (res.r->type == REDIS_REPLY_ARRAY && res.r->element[0]->type == REDIS_REPLY_STRING)
    f.result_json.assign(res.r->element[0]->str, res.r->element[0]->len);
  *job = std::move(f);
  return Status::Ok();
}

Status RedisJobQueue::Acknowledge(const FinishedJob& job) {
  Reply r;
  Status s = Run({"LREM", prefix_ + ":done:pending", "1", job.token}, &r);
  if (!s.ok()) return s;
  // Drop the job hash unless a newer generation has replaced it meanwhile.
  Reply g;
  s = Run({"HGET", prefix_ + ":job:" + job.id, "generation"}, &g);
  if (s.ok() && g.r->type == REDIS_REPLY_STRING && std::atoll(g.r->str) == job.generation) {
    Reply d;
    s = Run({"DEL", prefix_ + ":job:" + job.id}, &d);
  }
  return s;
}

Status RedisJobQueue::RecoverUnacknowledged(int* moved) {
  *moved = 0;
  for (;;) {
    Reply r;
    Status s = Run({"LMOVE", prefix_ + ":done:pending", prefix_ + ":done", "RIGHT", "RIGHT"}, &r);
    if (!s.ok()) return s;
    if (r.r->type != REDIS_REPLY_STRING) return Status::Ok();
    ++*moved;
  }
}

Status RedisJobQueue::QueueDepth(int64_t* queued, int64_t* leased) {
  Reply a, b;
  Status s = Run({"ZCARD", prefix_ + ":queue"}, &a);
  if (s.ok()) s = Run({"ZCARD", prefix_ + ":leases"}, &b);
  if (!s.ok()) return s;
  *queued = a.r->integer;
  *leased = b.r->integer;
  return Status::Ok();
}

}  // namespace kgym
