#include "fault/fault_points.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace kgym::fault {

const std::vector<PointInfo>& Points() {
  static const std::vector<PointInfo> points = {
      {"zygote.fork", "refuse die", "sandbox/zygote.cc Zygote::Fork",
       "the zygote answers a fork request with an error (refuse) or is killed as the request goes out (die; the next "
       "fork starts a new zygote): the worker does not start, the evaluation is a system error and is retried"},
      {"worker.spawn", "emfile", "sandbox/worker_session.cc WorkerSession::Start",
       "the worker's private channel cannot be made: the worker does not start, system error, retried"},
      {"memfd.create", "enomem", "sandbox/shm.cc Region::Lent, Region::SealedCopy",
       "memfd_create fails: no lent buffer is made, the worker sends its outputs in memfds of its own"},
      {"memfd.seal", "eperm", "sandbox/shm.cc Region::Lent, Region::SealedCopy",
       "sealing a new memfd fails: as memfd.create"},
      {"memfd.map", "enomem", "sandbox/shm.cc Region::FromSealedMemfd",
       "mapping a worker's sealed memfd fails (the supervisor's I/O error): the evaluation is a system error naming "
       "the mapping, retried"},
      {"lent.register", "fail", "eval/lent_buffers.cc LentBuffers::Free",
       "a buffer cannot be lent to the candidate's worker: the reply's outputs come in the worker's own memfd"},
      {"channel.read", "short garbage eof", "sandbox/channel.cc RecvFrame",
       "the supervisor's read of a frame sees its payload cut short (short), a length past the limits (garbage) or "
       "the end of the stream inside the prefix (eof): what a tampering candidate looks like, so the candidate runs "
       "again on a fresh worker, once, and the second run decides; in a reference's run or in a worker's hello "
       "(before any candidate code ran), a system error, retried. Scopes: hello, reference, candidate"},
      {"store.insert", "full ioerr busy", "store/job_store.cc JobStore::Insert, Resubmit",
       "writing a new job fails with SQLITE_FULL, SQLITE_IOERR or SQLITE_BUSY: the submission is refused with 503 "
       "and Retry-After before it is accepted; nothing is stored"},
      {"store.update", "full ioerr busy", "store/job_store.cc JobStore::MarkRunning, MarkQueued",
       "a job's state change fails: the job runs on and its result is stored as usual"},
      {"store.commit", "full ioerr busy", "store/job_store.cc JobStore::Complete",
       "storing a result fails: the service keeps the result and writes it again until the store takes it (clients "
       "waiting get it then); with Redis the result is acknowledged only once stored"},
      {"redis.connect", "refuse", "store/redis_queue.cc RedisJobQueue::Connect and reconnects",
       "a connection to Redis cannot be made: the caller waits and tries again"},
      {"redis.command", "drop", "store/redis_queue.cc RedisJobQueue::Run",
       "the connection drops as a command goes out: the command fails, the next one reconnects; an accepted job "
       "waits for the queue (the API node queues it again), a worker's claim or completion is tried again"},
      {"redis.lease", "drop", "store/redis_queue.cc RedisJobQueue::Heartbeat",
       "a lease renewal is lost: with enough lost the lease expires, the job goes back to the queue, and the first "
       "worker's late result is refused (each generation completes once)"},
      {"refcache.insert", "oom", "eval/reference_cache.cc ReferenceCache::Get",
       "keeping a computed reference fails for want of memory: the evaluations waiting get it, it is not kept"},
      {"timing_lock.holder", "death", "eval/timed_calls.cc, under the device's TimingLock",
       "the worker holding the device's timing lock is killed (SIGKILL from outside): the lock is released; a "
       "reference's death is a system error, retried; other evaluations go on"},
      {"learner.request", "kill garbage", "train/learner_process.cc LearnerProcess::Call",
       "the learner is killed as a request goes out (kill) or its reply is not JSON (garbage): kgym train restarts "
       "the learner from the newest checkpoint and does the steps after it again"},
      {"learner.train_step", "exit", "python/kgym_train/learner.py Learner._ppo_step, after the optimizer step",
       "the learner process dies in the middle of a PPO step: as learner.request"},
      {"learner.grad", "nonfinite", "python/kgym_train/learner.py Learner.apply_gradients",
       "a step's gradient norm is not finite: the learner skips the optimizer step (actor/grad_norm_nonfinite, the "
       "norm and loss null in its strict-JSON reply) and the run goes on"},
      {"gym.request", "reset 500 slow", "agent/eval_backend_http.cc (the trainer's and agent's gym client)",
       "a POST /evaluate's reply is lost after the gym got it: connection reset, HTTP 500, or no answer within the "
       "client's timeout (slow): the client asks again with the same task_id, so the gym's answer is the one "
       "evaluation's"},
  };
  return points;
}

namespace internal {
std::atomic<int> g_state{0};
}  // namespace internal

namespace {

struct Entry {
  std::string text;  // POINT[.SCOPE]@N: the marker's name
  std::string point, scope, mode;
  int64_t first = 1, count = 1;  // count 0: every hit from `first` on
  int64_t hits = 0;
  bool owned = false;  // this process made the entry's marker (KGYM_FAULTS_DIR): its later hits fire too
  bool spent = false;  // another process fired it first
};

struct Registry {
  std::mutex mu;
  std::vector<Entry> entries;
  std::map<std::string, int64_t, std::less<>> fired;
  std::string env_error;
  bool env_read = false;
};

Registry& Reg() {
  static Registry* r = new Registry();  // never destroyed: sites may run during static destruction
  return *r;
}

const PointInfo* Find(std::string_view name) {
  for (const auto& p : Points())
    if (name == p.name) return &p;
  return nullptr;
}

bool HasMode(const PointInfo& p, const std::string& mode) {
  std::string modes = std::string(" ") + p.modes + " ";
  return modes.find(" " + mode + " ") != std::string::npos;
}

std::string DefaultMode(const PointInfo& p) {
  std::string modes = p.modes;
  return modes.substr(0, modes.find(' '));
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::atoll(s.c_str());
  return true;
}

// One "POINT[@N][*K][:MODE]".
std::string ParseEntry(const std::string& text, Entry* e) {
  std::string rest = text;
  if (auto colon = rest.find(':'); colon != std::string::npos) {
    e->mode = rest.substr(colon + 1);
    rest.resize(colon);
  }
  if (auto star = rest.find('*'); star != std::string::npos) {
    if (!ParseInt(rest.substr(star + 1), &e->count)) return "bad count in '" + text + "' (POINT@N*K:MODE)";
    rest.resize(star);
  }
  if (auto at = rest.find('@'); at != std::string::npos) {
    if (!ParseInt(rest.substr(at + 1), &e->first) || e->first < 1)
      return "bad hit number in '" + text + "' (POINT@N*K:MODE, N from 1)";
    rest.resize(at);
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    e->scope = rest.substr(slash + 1);
    rest.resize(slash);
  }
  e->text = rest + (e->scope.empty() ? "" : "." + e->scope) + "@" + std::to_string(e->first);
  e->point = rest;
  const PointInfo* p = Find(rest);
  if (!p) return "unknown fault point '" + rest + "' (the points are listed in src/fault/fault_points.cc)";
  if (e->mode.empty()) e->mode = DefaultMode(*p);
  if (!HasMode(*p, e->mode)) return "fault point " + rest + " has no mode '" + e->mode + "' (modes: " + p->modes + ")";
  return "";
}

std::string MarkerPath(const std::string& entry) {
  const char* dir = std::getenv("KGYM_FAULTS_DIR");
  if (!dir || !*dir) return "";
  return std::string(dir) + "/" + entry;
}

std::string ArmLocked(Registry& r, const std::string& spec) {
  std::vector<Entry> entries;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    Entry e;
    if (std::string err = ParseEntry(item, &e); !err.empty()) return err;
    const std::string marker = MarkerPath(e.text);
    if (!marker.empty() && ::access(marker.c_str(), F_OK) == 0) continue;  // fired in an earlier process
    entries.push_back(std::move(e));
  }
  r.entries = std::move(entries);
  internal::g_state.store(r.entries.empty() ? 1 : 2, std::memory_order_relaxed);
  return "";
}

void ReadEnvironmentLocked(Registry& r) {
  if (r.env_read) return;
  r.env_read = true;
  const char* spec = std::getenv("KGYM_FAULTS");
  r.env_error = ArmLocked(r, spec ? spec : "");
  if (!r.env_error.empty()) {
    std::fprintf(stderr, "kgym: KGYM_FAULTS: %s\n", r.env_error.c_str());
    internal::g_state.store(1, std::memory_order_relaxed);
  }
}

}  // namespace

namespace internal {
std::optional<Fired> SlowHit(std::string_view point, std::string_view scope) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  ReadEnvironmentLocked(r);
  for (auto& e : r.entries) {
    if (e.point != point || (!e.scope.empty() && e.scope != scope) || e.spent) continue;
    const int64_t hit = ++e.hits;
    if (hit < e.first || (e.count > 0 && hit >= e.first + e.count)) continue;
    if (const std::string marker = MarkerPath(e.text); !marker.empty() && !e.owned) {
      // The first process to fire the entry makes its marker; any other process armed with it lets it go.
      int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) {
        e.spent = true;
        continue;
      }
      ::close(fd);
      e.owned = true;
    }
    r.fired[e.point]++;
    std::fprintf(stderr, "kgym: fault %s fired (%s, hit %lld)\n", e.text.c_str(), e.mode.c_str(),
                 static_cast<long long>(hit));
    return Fired{e.point, e.mode, hit};
  }
  return std::nullopt;
}
}  // namespace internal

std::string Arm(const std::string& spec) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  r.env_read = true;  // a test's arming replaces the environment's
  return ArmLocked(r, spec);
}

void Disarm() { Arm(""); }

std::string ArmFromEnvironment() {
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  ReadEnvironmentLocked(r);
  return r.env_error;
}

int64_t FiredCount(std::string_view point) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> l(r.mu);
  auto it = r.fired.find(point);
  return it == r.fired.end() ? 0 : it->second;
}

}  // namespace kgym::fault
