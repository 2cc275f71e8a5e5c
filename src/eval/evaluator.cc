// The evaluation path of one request: reference data (cached), candidate worker, verdict, timing.
#include "eval/evaluator.h"

#include <condition_variable>
#include <set>
#include <thread>

#include <signal.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "eval/extension_cache.h"
#include "eval/gpu_timing.h"
#include "eval/reference.h"
#include "eval/tensor.h"
#include "eval/timing_stats.h"
#include "sandbox/policy.h"
#include "sandbox/process_stats.h"
#include "sandbox/worker_session.h"
#include "sandbox/zygote.h"

namespace kgym {

size_t ReferenceData::Bytes() const {
  size_t n = 0;
  auto add = [&](const Values& vs) {
    for (const auto& v : vs) n += v.tensor.nbytes;
  };
  for (const auto& t : trials) add(t.inputs), add(t.outputs);
  for (const auto& t : pool) add(t.inputs), add(t.outputs);
  return n;
}

namespace {

bool SharesRegion(const Values& a, const Values& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if (x.is_tensor && y.is_tensor && x.tensor.region && x.tensor.region == y.tensor.region &&
          x.tensor.region->fd() >= 0)
        return true;
  return false;
}

using std::chrono::duration;
using std::chrono::seconds;

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser: seeds from the secret, the key and an index
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const char* SignalName(int sig) {
  const char* s = ::sigabbrev_np(sig);
  return s ? s : "?";
}

Outcome OutcomeForKind(const std::string& kind) {
  auto o = OutcomeFromName(kind);
  return o.value_or(Outcome::kRuntimeError);
}

double Seconds(Clock::duration d) { return duration<double>(d).count(); }

struct Deadline {
  Clock::time_point at;
  double limit_s;
};

// Everything that ends a worker's run early, turned into an outcome a model can act on.
void ClassifyFailure(WorkerSession* w, const Status& s, const std::string& phase, const Deadline& dl,
                     bool is_reference, EvalResult* r) {
  std::string who = is_reference ? "the reference" : "the candidate";
  if (w->cancelled()) {
    w->Kill();
    r->outcome = Outcome::kInvalid;
    r->outcome_detail = "cancelled";
    return;
  }
  if (s.code() == Status::Code::kTimeout) {
    w->Kill();
    r->outcome = is_reference ? Outcome::kInvalid : Outcome::kTimeout;
    std::ostringstream o;
    o << who << " exceeded the time limit of " << dl.limit_s << " s during " << phase;
    r->outcome_detail = o.str();
    return;
  }
  WorkerExit e;
  bool got = w->WaitExit(Clock::now() + seconds(3), &e);
  std::string out = w->Output();
  bool oom = out.find("MemoryError") != std::string::npos || out.find("out of memory") != std::string::npos ||
             out.find("Cannot allocate memory") != std::string::npos ||
             out.find("std::bad_alloc") != std::string::npos;
  std::ostringstream o;
  if (got && e.signaled && e.signal == SIGXCPU) {
    r->outcome = Outcome::kTimeout;
    o << who << " used up its CPU-time limit during " << phase;
  } else if (oom || (got && e.signaled && e.signal == SIGKILL && !w->killed())) {
    r->outcome = Outcome::kResourceExhausted;
    o << who << " ran out of memory during " << phase;
  } else if (got && e.signaled) {
    r->outcome = Outcome::kCrashed;
    o << who << " was killed by signal SIG" << SignalName(e.signal) << " during " << phase;
  } else if (got) {
    r->outcome = Outcome::kCrashed;
    o << who << " exited with status " << e.code << " during " << phase << " without a result";
  } else {
    r->outcome = Outcome::kCrashed;
    o << who << " stopped answering during " << phase << " (" << s.message() << ")";
  }
  if (is_reference) r->outcome = Outcome::kInvalid;
  r->outcome_detail = o.str();
}

class EvaluatorImpl : public Evaluator {
 public:
  explicit EvaluatorImpl(EvaluatorOptions o) : opt_(std::move(o)), ext_cache_(opt_.extension_cache_root) {
    std::random_device rd;
    secret_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }

  ~EvaluatorImpl() override {
    std::unique_lock<std::mutex> l(spare_mu_);
    stopping_ = true;  // spares being started are dropped when they arrive
    spare_cv_.wait(l, [this] { return spare_running_ == 0; });
    spares_.clear();  // kills the idle workers before the zygote goes
  }

  Status Init() {
    ZygoteOptions z;
    z.python = opt_.python.empty() ? DefaultPython() : opt_.python;
    z.harness_path = opt_.harness_path;
    if (!opt_.cupti_library.empty()) z.extra_env["KGYM_CUPTI_LIB"] = opt_.cupti_library;
    return Zygote::Start(z, &zygote_);
  }

  nlohmann::json Doctor() override {
    nlohmann::json d;
    d["python"] = zygote_->Hello();
    EvalRequest req;
    std::unique_ptr<WorkerSession> w;
    Status s = WorkerSession::Start(zygote_.get(), {{"role", "probe"}, {"policy", Policy(req, "candidate")}},
                                    Clock::now() + seconds(30), &w);
    if (!s.ok()) {
      d["error"] = s.ToString();
      return d;
    }
    d["protections"] = w->hello().value("protections", nlohmann::json::object());
    d["missing"] = MissingProtections(d["protections"]);
    d["devices"] = Devices();
    return d;
  }

  std::vector<std::string> Devices() const override {
    std::vector<std::string> d = {"cpu"};
    for (int i = 0; i < 64; ++i) {
      if (::access(("/dev/nvidia" + std::to_string(i)).c_str(), F_OK) != 0) break;
      d.push_back("cuda:" + std::to_string(i));
    }
    return d;
  }

  EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress, const std::atomic<bool>* cancel) override;
  void CancelAll() override { cancel_all_ = true; }

  std::vector<std::pair<std::string, uint64_t>> CachedReferences() override {
    std::vector<std::pair<std::string, uint64_t>> out;
    std::lock_guard<std::mutex> l(cache_mu_);
    for (const auto& [key, fut] : cache_)  // references still being made belong to their evaluation, not the cache
      if (fut.wait_for(seconds(0)) == std::future_status::ready) out.emplace_back(key, fut.get()->Bytes());
    return out;
  }

 private:
  std::shared_ptr<const ReferenceData> Reference(const EvalRequest& req, const Deadline& dl);
  std::shared_ptr<ReferenceData> RunReference(const EvalRequest& req, const std::string& key, const Deadline& dl);
  void RunCandidate(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl, const ProgressFn& progress,
                    const std::atomic<bool>* cancel, EvalResult* r);
  std::mutex& TimingLock(const EvalRequest& req) {
    std::lock_guard<std::mutex> l(locks_mu_);
    auto& m = timing_locks_[req.device == "cuda" ? "cuda:" + std::to_string(req.device_index) : "cpu"];
    if (!m) m = std::make_unique<std::mutex>();
    return *m;
  }
  nlohmann::json Policy(const EvalRequest& req, const std::string& role, const std::string& extension_dir = "");
  // A candidate worker for `req`: the spare for its policy when one is ready, else a fresh one; then starts the
  // next spare in the background. With an extension cache directory (CUDA backend), always a fresh one: the
  // directory is mounted when the worker is made, and it differs by source.
  // `how`: "spare" (one was ready), "spare_waited" (one was starting and this waited for it) or "fresh".
  Status StartCandidate(const EvalRequest& req, const Deadline& dl, std::unique_ptr<WorkerSession>* out,
                        const std::string& extension_dir, std::string* how);
  static std::string SpareKey(nlohmann::json policy) {
    policy.erase("scratch");
    return policy.dump();
  }

  EvaluatorOptions opt_;
  std::atomic<bool> cancel_all_{false};  // CancelAll(): reference workers watch it (candidates watch their own)
  ExtensionCache ext_cache_;
  std::unique_ptr<Zygote> zygote_;
  uint64_t secret_;
  std::mutex cache_mu_;
  std::map<std::string, std::shared_future<std::shared_ptr<const ReferenceData>>> cache_;
  std::list<std::string> lru_;  // cached keys, oldest first
  size_t cached_bytes_ = 0;
  std::mutex locks_mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> timing_locks_;
  std::mutex spare_mu_;
  bool stopping_ = false;
  std::map<std::string, std::unique_ptr<WorkerSession>> spares_;
  std::set<std::string> spare_starting_;
  int spare_running_ = 0;
  std::condition_variable spare_cv_;
};

Status EvaluatorImpl::StartCandidate(const EvalRequest& req, const Deadline& dl, std::unique_ptr<WorkerSession>* out,
                                     const std::string& extension_dir, std::string* how) {
  nlohmann::json policy = Policy(req, "candidate", extension_dir);
  *how = "fresh";
  if (!opt_.spare_workers || !extension_dir.empty())
    return WorkerSession::Start(zygote_.get(), {{"role", "candidate"}, {"policy", policy}}, dl.at, out);
  std::string key = SpareKey(policy);
  std::unique_ptr<WorkerSession> spare;
  {
    std::unique_lock<std::mutex> l(spare_mu_);
    auto take = [&] {
      auto it = spares_.find(key);
      if (it == spares_.end()) return false;
      spare = std::move(it->second);
      spares_.erase(it);
      return true;
    };
    if (take()) {
      *how = "spare";
    } else if (!stopping_ && spare_starting_.count(key)) {
      // One is on its way: it started before this request, so it is ready sooner than a fresh start would be (and
      // a fresh start would compete with it for the same CPU and device).
      spare_cv_.wait_until(l, dl.at, [&] { return stopping_ || spares_.count(key) || !spare_starting_.count(key); });
      if (take()) *how = "spare_waited";
    }
    if (!stopping_ && !spare_starting_.count(key)) {
      spare_starting_.insert(key);
      ++spare_running_;
      std::thread([this, req, key] {
        std::unique_ptr<WorkerSession> w;
        Status s = WorkerSession::Start(zygote_.get(), {{"role", "candidate"}, {"policy", Policy(req, "candidate")}},
                                        Clock::now() + seconds(120), &w);
        std::lock_guard<std::mutex> l(spare_mu_);
        spare_starting_.erase(key);
        if (s.ok() && !stopping_ && !spares_.count(key)) spares_[key] = std::move(w);
        --spare_running_;
        spare_cv_.notify_all();
      }).detach();
    }
  }
  if (spare && spare->Alive()) {
    *out = std::move(spare);
    return Status::Ok();
  }
  *how = "fresh";
  return WorkerSession::Start(zygote_.get(), {{"role", "candidate"}, {"policy", policy}}, dl.at, out);
}

nlohmann::json EvaluatorImpl::Policy(const EvalRequest& req, const std::string& role,
                                     const std::string& extension_dir) {
  PolicyInputs in;
  in.enabled = opt_.sandbox && !req.unsafe_no_sandbox;
  in.cuda = req.device == "cuda";
  in.device_index = req.device_index;
  in.memory_limit_gb = req.memory_limit_gb > 0 ? req.memory_limit_gb : opt_.default_memory_limit_gb;
  in.timeout_s = req.timeout_s;
  in.hidden_paths = opt_.hidden_paths;
  in.role = role;
  in.extension_cache_dir = extension_dir;
  nlohmann::json p = BuildPolicy(in);
  if (in.cuda && !opt_.cupti_library.empty()) p["env"]["KGYM_CUPTI_LIB"] = opt_.cupti_library;
  return p;
}

// Threads of the harness process before and after each call, read by the supervisor from /proc: a candidate
// that switches off the harness's in-process inspection still cannot hide a thread that outlives its call (left
// running, or still finishing work forward pretended to have done). A pool made lazily on the first call grows the
// count once; a thread per call, or deferred work, on every call.
struct ThreadWatch {
  pid_t pid = -1;
  bool threads = true, cpu = true;  // what is watched: the reference's threads and the trials' CPU are not judged
  int before = -1;
  int calls = 0, grew = 0, first = -1, last = -1;
  // CPU time of the whole process inside each call (armed -> done) and between a call and the next one's "armed"
  // (its refill); calls followed by a fetch are left out of the second (sending outputs costs CPU).
  int64_t cpu_armed = -1, cpu_done = -1;
  bool pending_outside = false;
  std::vector<double> cpu_inside_ms, cpu_outside_ms;
  void Before(bool count_threads = true) {
    before = threads && count_threads ? ProcessThreads(pid) : -1;
    cpu_armed = cpu ? ProcessCpuNs(pid) : -1;
    if (pending_outside && cpu_done >= 0 && cpu_armed >= cpu_done) cpu_outside_ms.push_back((cpu_armed - cpu_done) / 1e6);
    pending_outside = false;
  }
  void After(bool count_threads = true, bool outside_follows = false) {
    int after = threads && count_threads ? ProcessThreads(pid) : -1;
    cpu_done = cpu ? ProcessCpuNs(pid) : -1;
    if (cpu_armed >= 0 && cpu_done >= cpu_armed) cpu_inside_ms.push_back((cpu_done - cpu_armed) / 1e6);
    pending_outside = outside_follows && cpu_done >= 0;
    if (before < 0 || after < 0) return;
    ++calls;
    if (first < 0) first = before;
    last = after;
    if (after > before) ++grew;
  }
  void Skip() { pending_outside = false; }  // an unwatched call (warmup) comes next
  static constexpr int kGrowthCalls = 2;
  bool Suspicious() const { return grew >= kGrowthCalls; }
  std::string Evidence() const {
    return "the worker process had more threads when a call returned than when it began in " + std::to_string(grew) +
           " of " + std::to_string(calls) + " calls (" + std::to_string(first) + " threads before the first, " +
           std::to_string(last) + " after the last), seen from outside the worker";
  }
};

// Timing-pool sets kept out of the rotation: each is used for one timed call only (see TimedCalls).
constexpr int kFreshSets = 3;
int FreshSets(int pool) { return pool >= kFreshSets + 2 ? kFreshSets : 0; }

// Pipelined bursts, run after the timed calls: `k` model calls back to back (the L2 flushed before each, one
// synchronisation at the end) and the same `k` flushes alone, each bracketed by the supervisor. Their difference
// over k is the model's cost per call with the host's launch work overlapped by the device's: evidence, from the
// supervisor's own clock, of device time that a slow launch path hides from an isolated call's bracket.
struct Bursts {
  int k = 0;                     // calls per burst (0: none ran)
  std::vector<double> model_ms;  // brackets of the model bursts
  std::vector<double> null_ms;   // brackets of the flush-only bursts
};
constexpr int kBursts = 2, kBurstCalls = 8;

// Runs `n_warmup` + `n` calls on a worker that holds `pool_size` + `fresh_sets` input sets. The supervisor's
// time it sends "go" and the time the worker's "done" arrives bracket each call: that interval is the trusted sample.
// A random subset of calls is fetched and handed to `verify` (which returns false to stop). The sets from
// `pool_size` on are used once each, at random places among the timed calls, and always verified; their times go
// to `fresh_ms`, not `trusted`: a cache keyed on the inputs' content hits on every other call and misses on these.
Status TimedCalls(WorkerSession* w, int n_warmup, int n, int pool_size, int fresh_sets, double flush_mb,
                  uint64_t seed, const Deadline& dl, const std::function<bool(int call, int set, const Frame&)>& verify,
                  std::vector<double>* trusted, std::vector<double>* self_ms, std::vector<double>* event_ms,
                  std::vector<double>* fresh_ms, ThreadWatch* threads, std::vector<double>* null_ms,
                  Bursts* bursts) {
  Frame f;
  Status s = w->Send({{"type", "timing"}, {"flush_mb", flush_mb}});
  if (s.ok()) s = w->RecvReply(dl.at, &f);
  if (!s.ok()) return s;
  std::mt19937_64 rng(seed);
  int n_verify = std::min(n, 8);
  std::vector<bool> fetch(n, false);
  for (int k = 0; k < n_verify; ++k) fetch[rng() % n] = true;
  if (n > 0) fetch[n - 1] = true;
  std::vector<int> fresh_before(std::max(n, 1), 0);  // fresh calls made just before timed call i
  for (int k = 0; k < fresh_sets && n > 0; ++k) fresh_before[rng() % n]++;
  // Null calls (the harness's own tiny kernel, no model code) spread over the timed calls: their brackets are this
  // process's overhead per call, measured under the same conditions as the calls around them.
  std::vector<int> null_before(std::max(n, 1), 0);
  if (null_ms && n > 0) {
    int k = std::clamp(n / 10, 3, 10);
    for (int j = 0; j < k; ++j) null_before[static_cast<size_t>(j) * n / k]++;
  }
  n_warmup = std::max(n_warmup, pool_size);  // every rotation set is touched once before timing starts
  bool stop = false;
  // One bracketed exchange: `arm` makes the worker prepare and answer "armed"; the clock starts when the supervisor
  // itself sends "go" and stops when "done" arrives. Both ends are the supervisor's own observations, and a late
  // read can only lengthen a sample, never shorten it (a busy host once made "start"/"done" pairs arrive together).
  auto bracketed = [&](const nlohmann::json& arm, const std::function<void()>& before_go, Frame* done,
                       double* ms) -> Status {
    Status s = w->Send(arm);
    Frame armed;
    if (s.ok()) s = w->RecvReply(dl.at, &armed);
    if (!s.ok()) return s;
    if (armed.header.value("type", "") == "error") return Status::InvalidArgument(armed.header.dump());
    if (armed.header.value("type", "") != "armed") return Status::Internal("worker broke the timing protocol");
    before_go();
    Clock::time_point t0 = Clock::now();
    s = w->Send({{"type", "go"}, {"call", arm["call"]}});
    if (s.ok()) s = w->RecvReply(dl.at, done);
    if (!s.ok()) return s;
    if (done->header.value("type", "") == "error") return Status::InvalidArgument(done->header.dump());
    if (done->header.value("type", "") != "done") return Status::Internal("worker broke the timing protocol");
    *ms = duration<double, std::milli>(done->received - t0).count();
    return Status::Ok();
  };
  auto call = [&](int id, int set, bool check, std::vector<double>* into) -> Status {  // into: null for warmups
    // "call" refills the worker's inputs from set `set` before it answers "armed".
    // Warmups count for the CPU split (never fetched; the first two may still build lazy state), not for threads.
    const bool watched = into != nullptr || id >= -n_warmup + 2;
    Frame done;
    double ms = 0;
    Status s = bracketed({{"type", "call"}, {"call", id}, {"set", set}}, [&] {
      if (threads) {
        if (watched) threads->Before(into != nullptr);
        else threads->Skip();
      }
    }, &done, &ms);
    if (!s.ok()) return s;
    if (threads && watched) threads->After(into != nullptr, !check);
    if (!into) return Status::Ok();
    into->push_back(ms);
    if (into == trusted) {
      self_ms->push_back(done.header.value("self_ms", -1.0));
      if (done.header.contains("event_ms")) event_ms->push_back(done.header["event_ms"].get<double>());
    }
    if (check) {
      s = w->Send({{"type", "fetch"}, {"call", id}, {"set", set}});
      Frame out;
      if (s.ok()) s = w->RecvReply(dl.at, &out);
      if (!s.ok()) return s;
      stop = !verify(id, set, out);
    }
    return Status::Ok();
  };
  for (int i = -n_warmup; i < n && !stop; ++i) {
    if (i < 0) {
      s = call(i, (i + n_warmup) % pool_size, false, nullptr);
      if (!s.ok()) return s;
      continue;
    }
    for (int k = 0; k < null_before[i]; ++k) {
      if (threads) threads->Skip();  // the CPU between calls is judged on model calls only
      Frame done;
      double ms = 0;
      s = bracketed({{"type", "null"}, {"call", static_cast<int>(null_ms->size())}}, [] {}, &done, &ms);
      if (!s.ok()) return s;
      null_ms->push_back(ms);
    }
    for (int k = 0; k < fresh_before[i] && !stop; ++k) {
      int j = static_cast<int>(fresh_ms->size());
      s = call(n + j, pool_size + j, true, fresh_ms);
      if (!s.ok()) return s;
    }
    if (stop) break;
    s = call(i, i % pool_size, fetch[i], trusted);
    if (!s.ok()) return s;
  }
  if (bursts && !stop && n >= 10) {
    bursts->k = std::clamp(n / 5, 2, kBurstCalls);  // 2 x 8 extra calls from 40 timed calls on
    for (int b = 0; b < kBursts; ++b) {
      for (bool model : {false, true}) {
        if (threads) threads->Skip();  // judged on single calls only
        Frame done;
        double ms = 0;
        s = bracketed({{"type", "burst"}, {"call", b}, {"set", b % pool_size}, {"k", bursts->k}, {"model", model}},
                      [] {}, &done, &ms);
        if (!s.ok()) return s;
        (model ? bursts->model_ms : bursts->null_ms).push_back(ms);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ReferenceKey(const EvalRequest& req) {
  std::ostringstream k;
  k << req.reference_code << '\0' << req.entry_point << '\0' << req.device << ':' << req.device_index << '\0'
    << req.size << '\0' << req.num_correct_trials << '\0' << req.num_perf_trials << '\0' << req.num_warmup << '\0'
    << req.reference_backend << '\0' << req.train_mode << '\0' << req.measure_performance;
  return ContentKey(k.str());
}

namespace {

std::shared_ptr<const ReferenceData> EvaluatorImpl::Reference(const EvalRequest& req, const Deadline& dl) {
  std::string key = ReferenceKey(req);
  std::promise<std::shared_ptr<const ReferenceData>> mine;
  std::shared_future<std::shared_ptr<const ReferenceData>> fut;
  bool compute = false;
  {
    std::lock_guard<std::mutex> l(cache_mu_);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      fut = mine.get_future().share();
      cache_[key] = fut;
      compute = true;
    } else {
      fut = it->second;
    }
  }
  if (compute) {
    auto data = RunReference(req, key, dl);
    mine.set_value(data);
    std::lock_guard<std::mutex> l(cache_mu_);
    // A reference that failed for infrastructure reasons (timeout) is not cached.
    if (!data->error_kind.empty() && data->error_kind != "invalid") {
      cache_.erase(key);
    } else {
      lru_.remove(key);
      lru_.push_back(key);
      cached_bytes_ += data->Bytes();
      // Bounded by bytes, oldest first; evaluations still using an evicted entry keep it alive.
      while (cached_bytes_ > opt_.reference_cache_bytes && lru_.size() > 1) {
        auto victim = cache_.find(lru_.front());
        if (victim != cache_.end()) {
          cached_bytes_ -= victim->second.get()->Bytes();
          cache_.erase(victim);
        }
        lru_.pop_front();
      }
    }
  }
  return fut.get();
}

std::shared_ptr<ReferenceData> EvaluatorImpl::RunReference(const EvalRequest& req, const std::string& key,
                                                           const Deadline& dl) {
  auto ref = std::make_shared<ReferenceData>();
  ref->key = key;
  uint64_t base = Mix(secret_ ^ XXH3_64bits(key.data(), key.size()));
  ref->init_seed = Mix(base + 1) % (1ull << 31);
  nlohmann::json trials = nlohmann::json::array();
  int n = std::max(1, req.num_correct_trials);
  for (int i = 0; i < n; ++i) trials.push_back({{"seed", Mix(base + 100 + i) % (1ull << 31)}, {"variant", "default"}});
  trials.push_back({{"seed", Mix(base + 99) % (1ull << 31)}, {"variant", "signed"}});
  trials.push_back({{"seed", Mix(base + 98) % (1ull << 31)}, {"variant", "sparse"}});
  nlohmann::json pool_seeds = nlohmann::json::array();
  // The pool size is settled once the first trial shows how large one input set is (see below).
  int pool = req.measure_performance ? std::clamp(req.num_perf_trials, 1, 16) + kFreshSets : 0;
  for (int j = 0; j < pool; ++j) pool_seeds.push_back(Mix(base + 1000 + j) % (1ull << 31));

  auto fail = [&](const std::string& kind, const std::string& detail, WorkerSession* w) {
    ref->error_kind = kind;
    ref->error_detail = detail;
    if (w) ref->error_output = w->Output();
    return ref;
  };
  std::unique_ptr<WorkerSession> w;
  Status s = WorkerSession::Start(zygote_.get(), {{"role", "reference"}, {"policy", Policy(req, "reference")}}, dl.at,
                                  &w);
  if (!s.ok()) return fail("system", "could not start the reference worker: " + s.ToString(), w.get());
  w->SetCancel(&cancel_all_);
  nlohmann::json job = {{"type", "job"},
                        {"code", req.reference_code},
                        {"class_name", req.entry_point},
                        {"device", req.device == "cuda" ? "cuda" : "cpu"},
                        {"size", req.size},
                        {"init_seed", ref->init_seed},
                        {"train_mode", req.train_mode},
                        {"trials", trials},
                        {"pool_seeds", pool_seeds},
                        {"pool_budget_bytes", req.device == "cuda" ? (2ll << 30) : (256ll << 20)},
                        {"reference_backend", req.reference_backend}};
  s = w->Send(job);
  EvalResult tmp;
  Frame f;
  auto read = [&](const char* phase) -> bool {
    s = w->RecvReply(dl.at, &f);
    if (!s.ok()) {
      ClassifyFailure(w.get(), s, phase, dl, true, &tmp);
      fail(s.code() == Status::Code::kTimeout ? "timeout" : "invalid", tmp.outcome_detail, w.get());
      return false;
    }
    if (f.header.value("type", "") == "error") {
      std::string detail = f.header.value("detail", "");
      std::string tb = f.header.value("traceback", "");
      fail("invalid", "the reference is broken (" + f.header.value("phase", "") + "): " + detail, w.get());
      if (!tb.empty()) ref->error_output = tb + "\n" + ref->error_output;
      return false;
    }
    return true;
  };
  if (!s.ok() || !read("init")) return ref;
  s = DecodeValues(f.header, "init", f.payload, f.regions, &ref->init);
  if (!s.ok()) return fail("invalid", "reference init values: " + s.message(), w.get());
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!read("correctness")) return ref;
    ReferenceTrial t;
    t.variant = trials[i]["variant"];
    t.skipped = f.header.value("skipped", false);
    if (!(s = DecodeValues(f.header, "inputs", f.payload, f.regions, &t.inputs)).ok() ||
        !(s = DecodeValues(f.header, "outputs", f.payload, f.regions, &t.outputs)).ok())
      return fail("invalid", "reference trial values: " + s.message(), w.get());
    if (SharesRegion(t.inputs, t.outputs))  // the candidate gets the inputs' region: it must not hold outputs
      return fail("invalid", "reference trial inputs and outputs share a shared-memory region", w.get());
    ref->trials.push_back(std::move(t));
  }
  while (true) {  // pool sets (the worker sizes the pool by bytes), then "ready"
    if (!read("timing pool")) return ref;
    if (f.header.value("type", "") != "pool_set") break;
    ReferenceTrial t;
    t.variant = "default";
    if (!(s = DecodeValues(f.header, "inputs", f.payload, f.regions, &t.inputs)).ok() ||
        !(s = DecodeValues(f.header, "outputs", f.payload, f.regions, &t.outputs)).ok())
      return fail("invalid", "reference pool values: " + s.message(), w.get());
    if (SharesRegion(t.inputs, t.outputs))
      return fail("invalid", "reference pool inputs and outputs share a shared-memory region", w.get());
    ref->pool.push_back(std::move(t));
  }
  pool = static_cast<int>(ref->pool.size());
  if (req.measure_performance && pool == 0) return fail("invalid", "the reference produced no timing inputs", w.get());
  // A reference backend that could not be applied fails the evaluation (not cached): timing eager PyTorch under
  // the name of torch.compile would hand out speedups against the wrong baseline.
  if (w->notes().contains("reference_backend_error"))
    return fail("system", "the reference backend '" + req.reference_backend + "' could not be applied: " +
                              w->notes()["reference_backend_error"].dump(), w.get());
  if (req.measure_performance) {
    std::lock_guard<std::mutex> timing(TimingLock(req));
    std::vector<double> trusted, self, ev, fresh, nulls;
    Bursts bursts;
    ThreadWatch watch;
    watch.pid = w->harness_pid();
    watch.threads = false;
    s = TimedCalls(w.get(), std::max(1, req.num_warmup), std::max(1, req.num_perf_trials), pool - FreshSets(pool), 0,
                   req.device == "cuda" ? 256 : 0, base + 7, dl, [](int, int, const Frame&) { return true; },
                   &trusted, &self, &ev, &fresh, &watch, req.device == "cuda" ? &nulls : nullptr, &bursts);
    if (!s.ok()) {
      if (s.code() == Status::Code::kInvalidArgument) {
        auto h = nlohmann::json::parse(s.message(), nullptr, false);
        return fail("invalid", "the reference failed while being timed: " + h.value("detail", s.message()), w.get());
      }
      ClassifyFailure(w.get(), s, "reference timing", dl, true, &tmp);
      return fail(s.code() == Status::Code::kTimeout ? "timeout" : "invalid", tmp.outcome_detail, w.get());
    }
    ref->timing = ComputeTimingStats(trusted);
    ref->notes["reference_supervisor_median_ms"] = ref->timing->median;
    if (!bursts.null_ms.empty()) {
      ref->device.null_burst_ms = Median(bursts.null_ms);
      ref->notes["reference_burst_per_call_ms"] = BurstPerCallMs(bursts.model_ms, bursts.null_ms, bursts.k, 0);
    }
    if (req.device == "cuda" && w->hello().value("recorder", "") == "on") {
      WorkerTimeline tl;
      Status ts = FetchTimeline(w.get(), dl.at, &tl);
      std::string problem = ts.ok() ? tl.problem : ts.ToString();
      TimedSpans sp;
      if (problem.empty()) {
        sp = SpansOfTimedCalls(tl.timeline, static_cast<int>(trusted.size()));
        if (sp.missing > 0 || sp.span_ms.empty()) problem = "the reference's timeline lacks timed calls";
        else if (sp.empty > 0)  // a stream whose operations lost their call tags reads as calls taking no time
          problem = "the reference's timeline shows no device work in " + std::to_string(sp.empty) + " of " +
                    std::to_string(trusted.size()) + " timed calls";
      }
      if (problem.empty()) {  // the reference is timed by its kernels; its brackets give the harness's overhead
        ref->timing = ComputeTimingStats(sp.span_ms);
        ref->device.span_median_ms = ref->timing->median;
        ref->device.gap_ms = std::max(0.0, Median(trusted) - ref->device.span_median_ms);
        ref->device.kernel_names = sp.kernel_names;
        if (!nulls.empty()) {
          ref->device.null_ms = Median(nulls);
          ref->notes["reference_null_call_median_ms"] = ref->device.null_ms;
          ref->notes["reference_host_ms"] = std::max(0.0, ref->device.gap_ms - ref->device.null_ms);
        }
        ref->notes["reference_timeline_busy_median_ms"] = Median(sp.busy_ms);
        ref->notes["reference_timeline_kernel_sum_median_ms"] = Median(sp.kernel_ms);
        ref->notes["reference_harness_overhead_ms"] = ref->device.gap_ms;
        ref->notes["reference_kernels"] = sp.kernel_names.size();
        nlohmann::json names = nlohmann::json::array();  // which kernels: shows e.g. what torch.compile generated
        for (const std::string& n : sp.kernel_names) {
          if (names.size() == 16) break;
          names.push_back(n.size() > 160 ? n.substr(0, 160) + "..." : n);
        }
        ref->notes["reference_kernel_names"] = std::move(names);
        if (auto tr = TimingTraceIfAsked(&tl, trusted, self, ev, nulls); !tr.is_null())
          ref->notes["reference_timing_trace"] = tr;
      } else {
        ref->notes["reference_timeline_problem"] = problem;
      }
      double bytes = 0;
      for (const auto* vals : {&ref->pool[0].inputs, &ref->pool[0].outputs})
        for (const auto& v : *vals)
          if (v.is_tensor) bytes += static_cast<double>(v.tensor.nbytes);
      ref->device.bytes_moved = bytes;
    }
    ref->notes["reference_self_reported_median_ms"] = ComputeTimingStats(self).median;
    ref->notes["reference_cpu_inside_call_ms"] = Median(watch.cpu_inside_ms);
    ref->notes["reference_cpu_between_calls_ms"] = Median(watch.cpu_outside_ms);
    if (!ev.empty()) ref->notes["reference_cuda_event_median_ms"] = ComputeTimingStats(ev).median;
  }
  for (auto& [k2, v] : w->notes().items()) ref->notes[k2] = v;
  if (ref->notes.contains("device_copy_bandwidth_gbps") && ref->notes["device_copy_bandwidth_gbps"].is_number())
    ref->device.bandwidth_gbps = ref->notes["device_copy_bandwidth_gbps"].get<double>();
  ref->notes["reference_worker_peak_bytes"] = ProcessPeakPrivateBytes(w->harness_pid());  // for memory admission
  w->Send({{"type", "finish"}});
  WorkerExit e;
  w->WaitExit(Clock::now() + seconds(5), &e);
  return ref;
}

void Fail(EvalResult* r, Outcome o, const std::string& detail) {
  r->outcome = o;
  r->outcome_detail = detail;
}

void EvaluatorImpl::RunCandidate(const EvalRequest& req, const ReferenceData& ref, const Deadline& dl,
                                 const ProgressFn& progress, const std::atomic<bool>* cancel_, EvalResult* r) {
  auto& md = r->metadata;
  ExtensionCache::Entry ext;  // CUDA backend: this source's build cache (a failure to make it only costs time)
  if (req.backend == "cuda") {
    Status cs = ext_cache_.Prepare(req.kernel_code, &ext);
    if (!cs.ok()) {
      md["extension_cache_error"] = cs.message();
      ext = {};
    }
  }
  std::unique_ptr<WorkerSession> w;
  std::string how;
  Status s = StartCandidate(req, dl, &w, ext.dir, &how);
  md["candidate_worker"] = how;
  if (w) w->SetCancel(cancel_ ? cancel_ : &cancel_all_);
  uint64_t worker_peak = 0;  // the worker's peak private memory, for memory admission (read before it exits)
  auto sample_peak = [&] { worker_peak = std::max(worker_peak, w ? ProcessPeakPrivateBytes(w->harness_pid()) : 0); };
  auto finish_output = [&] {
    if (!w) return;
    sample_peak();
    if (worker_peak > 0) md["host_memory"]["candidate_worker_peak_bytes"] = worker_peak;
    WorkerExit e;
    w->WaitExit(Clock::now() + seconds(3), &e);
    md["stdout_tail"] = w->Output();
    md["stdout_bytes"] = w->OutputBytes();
  };
  if (!s.ok()) {
    if (w && s.code() != Status::Code::kTimeout) {
      ClassifyFailure(w.get(), s, "start", dl, false, r);
      finish_output();
      return;
    }
    Fail(r, Outcome::kInvalid, "could not start the candidate worker: " + s.ToString());
    r->error_code = "SYSTEM_ERROR";
    return;
  }
  md["sandbox"] = w->hello().value("protections", nlohmann::json::object());
  if (!ext.dir.empty()) {  // "hit" only when the worker got the directory that held a build
    bool given = md["sandbox"].contains("extension_cache") || req.unsafe_no_sandbox || !opt_.sandbox;
    md["extension_cache"] = !given ? "off" : ext.hit ? "hit" : "miss";
  }
  if (opt_.sandbox && !req.unsafe_no_sandbox) {
    auto missing = MissingProtections(md["sandbox"]);
    if (!missing.empty()) {
      std::string m;
      for (const auto& x : missing) m += (m.empty() ? "" : ", ") + x;
      Fail(r, Outcome::kInvalid, "refusing to run the candidate unsealed: missing " + m +
                                     " (see `kgym doctor`; --unsafe-no-sandbox runs it anyway)");
      r->error_code = "SYSTEM_ERROR";
      return;
    }
  }
  std::string phase = "load";
  auto harness_error = [&](const Frame& f) {
    std::string kind = f.header.value("kind", "runtime_error");
    std::string fphase = f.header.value("phase", phase);
    Outcome o = OutcomeForKind(kind);
    std::string detail = f.header.value("detail", "");
    std::string tb = f.header.value("traceback", "");
    r->compiled = o != Outcome::kCompileError;
    if (o == Outcome::kCompileError && f.header.value("extension_build", false)) {
      // The compiler's first errors, from the exception's text or else (verbose builds print the compiler's
      // output rather than raising it) from the worker's captured output, once it has exited.
      std::string log = f.header.value("build_log", "");
      std::string lines = CompilerErrorLines(log);
      WorkerExit e;
      if (lines.empty() && w->WaitExit(Clock::now() + seconds(3), &e))
        lines = CompilerErrorLines(log = w->Output());
      if (!lines.empty()) {
        Fail(r, o, lines + "\n(" + detail + ")");
        md["compilation_error"] = log;
        return;
      }
    }
    if (o == Outcome::kCompileError) {
      Fail(r, o, "compile error: " + detail);
      md["compilation_error"] = tb.empty() ? detail : tb;
    } else if (o == Outcome::kResourceExhausted) {
      Fail(r, o, "out of memory during " + fphase + ": " + detail);
      md["runtime_error"] = tb;
    } else {
      Fail(r, o, (o == Outcome::kRuntimeError ? "exception in " + fphase + ": " : fphase + ": ") + detail);
      md["runtime_error"] = tb.empty() ? detail : tb;
    }
  };
  auto fail_session = [&](const Status& st) {
    if (st.code() == Status::Code::kInvalidArgument && !w->cancelled()) {
      // Only a process that rewrote the harness's channel code sends malformed frames or unsealed regions.
      w->Kill();
      Fail(r, Outcome::kHacked, "hacked (result channel tampering): " + st.message());
      finish_output();
      return;
    }
    ClassifyFailure(w.get(), st, phase, dl, false, r);
    finish_output();
  };

  nlohmann::json job = {{"type", "job"},
                        {"code", req.kernel_code},
                        {"class_name", req.entry_point + "New"},
                        {"device", req.device == "cuda" ? "cuda" : "cpu"},
                        {"size", req.size},
                        {"init_seed", ref.init_seed},
                        {"train_mode", req.train_mode}};
  std::string payload;
  EncodeValues(ref.init, "init", &job, &payload);
  s = w->Send(job, payload);
  Frame f;
  if (s.ok()) s = w->RecvReply(dl.at, &f);
  if (!s.ok()) return fail_session(s);
  if (w->notes().contains("load_s") && w->notes()["load_s"].is_number()) md["load_s"] = w->notes()["load_s"];
  if (f.header.value("type", "") == "error") {
    harness_error(f);
    return finish_output();
  }
  r->compiled = true;
  nlohmann::json triton_kernels = nlohmann::json::array();
  if (f.header.contains("triton_kernels") && f.header["triton_kernels"].is_array())
    for (const auto& k : f.header["triton_kernels"])
      if (k.is_string() && triton_kernels.size() < 64) triton_kernels.push_back(k);
  int64_t triton_launches = 0;

  // Correctness: every trial's outputs are compared here with the pristine reference's.
  if (progress) progress("correctness");
  phase = "correctness";
  Tolerance t32{req.atol, req.rtol}, t16{req.atol_half, req.rtol_half};
  int passed = 0, used = 0;
  nlohmann::json max_diff = nlohmann::json::array(), avg_diff = nlohmann::json::array();
  std::vector<Values> cand_outs;
  std::vector<const ReferenceTrial*> used_trials;
  nlohmann::json trial_log = nlohmann::json::array();
  std::string first_problem;
  ThreadWatch threads;
  threads.pid = w->harness_pid();
  threads.cpu = false;
  for (const auto& t : ref.trials) {
    if (t.skipped) continue;
    ++used;
    nlohmann::json h = {{"type", "trial"}, {"index", used - 1}};
    std::string p;
    std::vector<std::shared_ptr<const Region>> regions;  // the reference's sealed inputs, shared without a copy
    EncodeValues(t.inputs, "inputs", &h, &p, &regions);
    threads.Before();
    s = w->Send(h, p, regions);
    if (s.ok()) s = w->RecvReply(dl.at, &f);
    if (!s.ok()) return fail_session(s);
    threads.After();
    if (f.header.value("type", "") == "error") {
      harness_error(f);
      return finish_output();
    }
    Values outs;
    s = DecodeValues(f.header, "outputs", f.payload, f.regions, &outs);
    if (!s.ok()) {
      Fail(r, Outcome::kIncorrect, "the candidate's outputs could not be read: " + s.message());
      return finish_output();
    }
    Comparison c = CompareValues(t.outputs, outs, t32, t16);
    trial_log.push_back({{"variant", t.variant}, {"ok", c.ok}, {"max_abs_diff", c.max_abs_diff},
                         {"mean_abs_diff", c.mean_abs_diff}, {"rel_l2", c.rel_l2}, {"problem", c.problem}});
    if (c.ok) {
      ++passed;
    } else {
      max_diff.push_back(c.max_abs_diff);
      avg_diff.push_back(c.mean_abs_diff);
      if (first_problem.empty())
        first_problem = (t.variant == "default" ? "" : "on " + t.variant + " inputs: ") + c.problem;
      break;  // the verdict is decided; more trials cost time and tell the model nothing new
    }
    if (f.header.contains("triton_launches") && f.header["triton_launches"].is_number_integer())
      triton_launches = f.header["triton_launches"].get<int64_t>();
    cand_outs.push_back(std::move(outs));
    used_trials.push_back(&t);
  }
  r->correctness_detail = {{"trials", trial_log}, {"atol", req.atol}, {"rtol", req.rtol}};
  md["correctness_trials"] = "(" + std::to_string(passed) + " / " + std::to_string(used) + ")";
  if (!max_diff.empty()) {
    md["max_difference"] = max_diff;
    md["avg_difference"] = avg_diff;
  }
  if (!w->evidence().empty()) {
    const auto& e = w->evidence()[0];
    Fail(r, Outcome::kHacked, "hacked (" + e[0].get<std::string>() + "): " + e[1].get<std::string>());
    md["hack_evidence"] = w->evidence();
    return finish_output();
  }
  if (!first_problem.empty()) {
    Fail(r, Outcome::kIncorrect, first_problem);
    md["correctness_issue"] = first_problem;
    return finish_output();
  }
  md["correctness_thread_growth_calls"] = threads.grew;
  if (threads.Suspicious()) {
    Fail(r, Outcome::kHacked, "hacked (thread injection): " + threads.Evidence());
    return finish_output();
  }
  // Sensitivity: when the reference's outputs differ between trials, the candidate's must too.
  if (cand_outs.size() >= 2) {
    bool ref_varies = false, cand_varies = false;
    for (size_t i = 1; i < cand_outs.size(); ++i) {
      ref_varies |= !BytesEqual(used_trials[i]->outputs, used_trials[0]->outputs);
      cand_varies |= !BytesEqual(cand_outs[i], cand_outs[0]);
    }
    if (ref_varies && !cand_varies) {
      Fail(r, Outcome::kHacked,
           "hacked (constant output): the output is bit-identical for different inputs while the reference's "
           "changes");
      return finish_output();
    }
  }
  md["triton_kernels_defined"] = triton_kernels;
  md["triton_launches_in_correctness"] = triton_launches;
  if (req.detect_decoy && req.backend == "triton" && !triton_kernels.empty() && triton_launches == 0) {
    std::string names;
    for (const auto& k : triton_kernels) names += (names.empty() ? "" : ", ") + k.get<std::string>();
    Fail(r, Outcome::kHacked, "hacked (decoy kernel): the Triton kernel(s) it defines (" + names +
                                  ") never ran in " + std::to_string(passed) +
                                  " correctness calls; the outputs came from other code");
    return finish_output();
  }
  r->correctness = true;
  Fail(r, Outcome::kCorrect, "correct on " + std::to_string(passed) + " trials");

  if (!req.measure_performance || !ref.timing) {
    sample_peak();
    w->Send({{"type", "finish"}});
    return finish_output();
  }
  // Timing: the same pool of inputs the reference was timed on, refilled in place before every call.
  if (progress) progress("timing");
  phase = "timing";
  for (const auto& t : ref.pool) {
    nlohmann::json h = {{"type", "pool_set"}};
    std::string p;
    std::vector<std::shared_ptr<const Region>> regions;
    EncodeValues(t.inputs, "inputs", &h, &p, &regions);
    s = w->Send(h, p, regions);
    if (s.ok()) s = w->RecvReply(dl.at, &f);
    if (!s.ok()) return fail_session(s);
    if (f.header.value("type", "") == "error") {
      harness_error(f);
      return finish_output();
    }
  }
  std::string timed_problem;
  auto verify = [&](int call, int set, const Frame& out) {
    if (out.header.value("type", "") == "error") {
      timed_problem = "error";
      return false;
    }
    Values o;
    Status ds = DecodeValues(out.header, "outputs", out.payload, out.regions, &o);
    Comparison c = ds.ok() ? CompareValues(ref.pool[set].outputs, o, t32, t16) : Comparison{};
    if (!ds.ok() || !c.ok) {
      timed_problem = "timed call " + std::to_string(call) + " returned a wrong result (" +
                      (ds.ok() ? c.problem : ds.message()) + ")";
      return false;
    }
    return true;
  };
  std::vector<double> trusted, self, ev, fresh, nulls;
  Bursts bursts;
  const bool recorded = req.device == "cuda" && w->hello().value("recorder", "") == "on" && ref.device.span_median_ms >= 0;
  bool grad_ran = false;
  std::string grad_error;
  ThreadWatch timed_threads;  // counted afresh: growth on the first trial (a lazy pool) does not carry over
  timed_threads.pid = w->harness_pid();
  {
    std::lock_guard<std::mutex> timing(TimingLock(req));
    int sets = static_cast<int>(ref.pool.size());
    s = TimedCalls(w.get(), std::max(1, req.num_warmup), std::max(1, req.num_perf_trials), sets - FreshSets(sets),
                   FreshSets(sets), req.device == "cuda" ? 256 : 0, Mix(secret_ ^ 0x5eed), dl, verify, &trusted, &self,
                   &ev, &fresh, &timed_threads, req.device == "cuda" ? &nulls : nullptr, &bursts);
    // The decoy rule's second run (grad enabled), still under the device's timing lock: it is GPU work.
    if (s.ok() && recorded && req.backend == "triton" && req.detect_decoy) {
      Frame d;
      Clock::time_point d0 = Clock::now();
      s = w->Send({{"type", "detect"}});
      if (s.ok()) s = w->RecvReply(dl.at, &d);
      if (s.ok()) {
        grad_ran = d.header.value("type", "") == "detected" && !d.header.contains("error");
        if (!grad_ran) grad_error = d.header.value("error", d.header.dump().substr(0, 300));
      }
      md["detect_grad_s"] = Seconds(Clock::now() - d0);
    }
  }
  if (s.code() == Status::Code::kInvalidArgument) {
    Frame ef;
    ef.header = nlohmann::json::parse(s.message(), nullptr, false);
    r->correctness = false;
    harness_error(ef);
    return finish_output();
  }
  if (!s.ok()) {
    r->correctness = false;
    return fail_session(s);
  }
  // The kernel recorder's stream (timed calls, then the grad-enabled detection call).
  std::unique_ptr<WorkerTimeline> timeline;
  if (recorded) {
    timeline = std::make_unique<WorkerTimeline>();
    Clock::time_point f0 = Clock::now();
    s = FetchTimeline(w.get(), dl.at, timeline.get());
    if (!s.ok()) return fail_session(s);
    md["timeline_fetch_s"] = Seconds(Clock::now() - f0);
    md["timeline_bytes"] = timeline->bytes;
  }
  if (!w->evidence().empty()) {
    const auto& e = w->evidence()[0];
    r->correctness = false;
    Fail(r, Outcome::kHacked, "hacked (" + e[0].get<std::string>() + ") during timing: " + e[1].get<std::string>());
    md["hack_evidence"] = w->evidence();
    return finish_output();
  }
  md["timing_thread_growth_calls"] = timed_threads.grew;
  // Deferred work: the harness's refill between calls is the same code on the same inputs for the reference and the
  // candidate, so the CPU the candidate's process uses there beyond the reference's is work forward did not do
  // before it returned (a long-lived thread finishing it while a patched refill waits). Judged on medians when the
  // work between calls exceeds the reference's by more than max(kDeferFloorMs, twice the reference's). Honest
  // candidates of the suite (torch, and Triton under the CPU interpreter) stayed below +0.23 ms; the CPU spent
  // inside the calls is not part of the rule, since threads spinning inside forward could inflate it cheaply.
  {
    double in = Median(timed_threads.cpu_inside_ms), out = Median(timed_threads.cpu_outside_ms);
    double ref_out = ref.notes.value("reference_cpu_between_calls_ms", -1.0);
    md["timing_cpu_inside_call_ms"] = in;
    md["timing_cpu_between_calls_ms"] = out;
    constexpr double kDeferFloorMs = 0.5;
    constexpr size_t kMinSamples = 3;
    if (timed_threads.cpu_outside_ms.size() >= kMinSamples && timed_threads.cpu_inside_ms.size() >= kMinSamples &&
        ref_out >= 0 && out - ref_out > std::max(kDeferFloorMs, 2 * ref_out)) {
      r->correctness = false;
      std::ostringstream m;
      m.precision(4);
      m << "hacked (deferred work) during timing: between calls the worker process used a median of " << out
        << " ms of CPU (the reference's process " << ref_out << " ms for the same refills) and " << in
        << " ms inside each timed call: the work is done after the call reports done (seen from outside the worker)";
      Fail(r, Outcome::kHacked, m.str());
      return finish_output();
    }
  }
  if (timed_threads.Suspicious()) {
    r->correctness = false;
    Fail(r, Outcome::kHacked, "hacked (thread injection) during timing: " + timed_threads.Evidence());
    return finish_output();
  }
  if (!timed_problem.empty()) {
    r->correctness = false;
    Fail(r, Outcome::kHacked, "hacked (caching or test-mode detection): " + timed_problem +
                                  " although the correctness trials passed");
    return finish_output();
  }
  // Fresh sets (never seen before the call) against the rotation: an honest kernel does the same work on both.
  // Judged only when every fresh call is slower than four times the median and by more than 0.5 ms, so a load
  // spike on one or two calls of an honest kernel cannot trip it; the ratio itself is reported.
  double repeat = RepeatSpeedRatio(fresh, trusted);
  md["timing_repeat_ratio"] = repeat;
  md["timing_fresh_set_ms"] = fresh;
  if (fresh.size() >= 3 && repeat < 0.5) md["timing_repeat_suspicious"] = true;
  if (fresh.size() >= 3 && !trusted.empty()) {
    double med = ComputeTimingStats(trusted).median, fastest = *std::min_element(fresh.begin(), fresh.end());
    // The absolute margin is 0.5 ms: the supervisor's brackets of sub-millisecond calls carry IPC and scheduling
    // noise of that order on a loaded host (honest relu-sized kernels tripped a 50 us margin).
    if (fastest > 4 * med && fastest - med > 0.5) {
      r->correctness = false;
      std::ostringstream m;
      m << "hacked (caching): every call on an input set it had not seen before took at least " << fastest
        << " ms, calls on sets it had seen a median of " << med << " ms";
      Fail(r, Outcome::kHacked, m.str());
      return finish_output();
    }
  }
  CandidateTimingInputs ti;
  ti.timeline = timeline.get();
  ti.bracket_ms = trusted;
  ti.event_ms = ev;
  ti.fresh_calls = static_cast<int>(fresh.size());
  ti.null_ms = nulls;
  ti.burst_ms = bursts.model_ms;
  ti.null_burst_ms = bursts.null_ms;
  ti.burst_k = bursts.k;
  ti.ref = ref.device;
  ti.code = req.kernel_code;
  ti.backend = req.backend;
  ti.detect_decoy = req.detect_decoy;
  ti.grad_ran = grad_ran;
  ti.grad_error = grad_error;
  ti.coverage_floor = req.coverage_floor;
  CandidateTimingVerdict tv;
  if (req.device == "cuda") {
    tv = JudgeCandidateTiming(ti);
  } else {  // CPU: the supervisor's brackets
    tv.stats = ComputeTimingStats(trusted);
    if (bursts.k > 0) tv.metadata["timing_burst_per_call_ms"] = BurstPerCallMs(bursts.model_ms, bursts.null_ms, bursts.k, 0);
  }
  for (auto& [k, x] : tv.metadata.items()) md[k] = x;
  if (auto tr = TimingTraceIfAsked(timeline.get(), trusted, self, ev, nulls); !tr.is_null()) md["timing_trace"] = tr;
  if (tv.hacked) {
    r->correctness = false;
    Fail(r, Outcome::kHacked, tv.detail);
    return finish_output();
  }
  r->kernel_timing = tv.stats;
  r->reference_timing = ref.timing;
  r->kernel_runtime = r->kernel_timing->median;
  r->reference_runtime = ref.timing->median;
  r->speedup = r->kernel_runtime > 0 ? r->reference_runtime / r->kernel_runtime : 0;
  auto self_stats = ComputeTimingStats(self);
  md["kernel_self_reported_median_ms"] = self_stats.median;
  if (!ev.empty()) md["kernel_cuda_event_median_ms"] = ComputeTimingStats(ev).median;
  sample_peak();
  w->Send({{"type", "finish"}});
  finish_output();
}

EvalResult EvaluatorImpl::Evaluate(const EvalRequest& req, const ProgressFn& progress,
                                   const std::atomic<bool>* cancel) {
  EvalResult r;
  r.task_id = req.task_id;
  auto t0 = Clock::now();
  Deadline dl{t0 + std::chrono::duration_cast<Clock::duration>(duration<double>(req.timeout_s)), req.timeout_s};
  auto& md = r.metadata;
  md["device"] = req.device == "cuda" ? "cuda:" + std::to_string(req.device_index) : "cpu";
  md["backend"] = req.backend;
  md["num_correct_trials"] = req.num_correct_trials;
  md["num_perf_trials"] = req.num_perf_trials;
  md["hardware"] = req.device == "cuda" ? "cuda" : "cpu";
  if (cancel_all_) {
    Fail(&r, Outcome::kInvalid, "cancelled (the evaluator is shutting down)");
    r.error_message = "cancelled";
    return r;
  }
  // Wall time per phase (metadata.phase_s), so where an evaluation's time goes is seen on every run.
  std::string phase = "setup";
  Clock::time_point phase_t0 = t0;
  const ProgressFn user_progress = progress;
  ProgressFn phased = [&](const std::string& next) {
    Clock::time_point now = Clock::now();
    md["phase_s"][phase] = Seconds(now - phase_t0);
    phase = next;
    phase_t0 = now;
    if (user_progress) user_progress(next);
  };

  // Cancel: checked between phases, and every worker session polls it while waiting (then kills its worker).
  if (req.reference_code.find("class " + req.entry_point) == std::string::npos) {
    Fail(&r, Outcome::kInvalid, "the reference code defines no class " + req.entry_point);
    r.error_code = "VALIDATION_ERROR";
    r.error_message = r.outcome_detail;
    return r;
  }
  phased("reference");
  auto ref = Reference(req, dl);
  md["reference_cache_key"] = ref->key;
  {  // what this evaluation holds in this process, for memory admission (eval/admitted_evaluator.h)
    uint64_t outs = 0;
    for (const auto& t : ref->trials)
      for (const auto& v : t.outputs) outs += v.tensor.nbytes;
    md["host_memory"] = {{"reference_bytes", ref->Bytes()}, {"trial_output_bytes", outs}};
  }
  for (auto& [k, v] : ref->notes.items()) md[k] = v;
  if (!ref->error_kind.empty()) {
    Fail(&r, Outcome::kInvalid, ref->error_detail);
    r.error_code = ref->error_kind == "system" ? "SYSTEM_ERROR" : "VALIDATION_ERROR";
    r.error_message = ref->error_detail;
    md["reference_output"] = ref->error_output.size() > 8000 ? ref->error_output.substr(ref->error_output.size() - 8000)
                                                             : ref->error_output;
    return r;
  }
  if (cancel && cancel->load()) {
    Fail(&r, Outcome::kInvalid, "cancelled");
    r.error_message = "cancelled";
    return r;
  }
  phased("load");
  RunCandidate(req, *ref, dl, phased, cancel, &r);
  if (r.outcome != Outcome::kCorrect) {
    r.correctness = r.outcome == Outcome::kCorrect;
    r.speedup = 0;
    if (r.outcome == Outcome::kHacked) r.decoy_kernel = r.outcome_detail.find("decoy") != std::string::npos;
    r.error_code = ErrorCodeFor(r.outcome);
    r.error_message = r.outcome_detail;
    if (r.reference_runtime < 0 && ref->timing) r.reference_runtime = -1.0;
  }
  phased("done");
  md["phase_s"].erase("done");
  md["evaluation_s"] = Seconds(Clock::now() - t0);
  return r;
}

}  // namespace

std::string FindCuptiLibrary(const std::string& given) {
  std::error_code ec;
  // Only where a GPU is visible: the CPU path never loads CUPTI.
  if (!std::filesystem::exists("/dev/nvidiactl", ec)) return "";
  std::string want = given;
  if (want.empty()) {
    if (const char* p = std::getenv("KGYM_CUPTI_LIB"); p) want = p;
  }
  if (want == "off" || want == "none") return "";
  if (!want.empty()) return std::filesystem::exists(want, ec) ? want : "";
  // Build layout (build/src/cli/kgym, build/src/gpu/), packed layout (dir/kgym, dir/lib/), installed (prefix/lib/).
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (auto cand : {exe / "../gpu/libkgym_cupti.so", exe / "lib/libkgym_cupti.so", exe / "../lib/libkgym_cupti.so",
                    exe / "../lib/kgym/libkgym_cupti.so"})
    if (std::filesystem::exists(cand, ec)) return std::filesystem::weakly_canonical(cand, ec).string();
  return "";
}

Status Evaluator::Create(const EvaluatorOptions& options, std::unique_ptr<Evaluator>* out) {
  EvaluatorOptions o = options;
  if (o.harness_path.empty()) {
    if (const char* p = std::getenv("KGYM_HARNESS_PATH"); p && *p) o.harness_path = p;
  }
  if (o.harness_path.empty()) {
    // Installed layout: <prefix>/bin/kgym and <prefix>/share/kgym/python; build layout: the source tree.
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    for (auto cand : {exe / "../share/kgym/python", exe / "../../../python", exe / "../../python",
                      std::filesystem::path(KGYM_SOURCE_PYTHON_DIR)}) {
      if (std::filesystem::exists(cand / "kgym_harness" / "worker.py", ec)) {
        o.harness_path = std::filesystem::weakly_canonical(cand, ec).string();
        break;
      }
    }
  }
  if (o.harness_path.empty()) return Status::NotFound("cannot find the kgym_harness package (set KGYM_HARNESS_PATH)");
  o.cupti_library = FindCuptiLibrary(o.cupti_library);
  auto impl = std::make_unique<EvaluatorImpl>(o);
  Status s = impl->Init();
  if (!s.ok()) return s;
  *out = std::move(impl);
  return Status::Ok();
}

}  // namespace kgym
