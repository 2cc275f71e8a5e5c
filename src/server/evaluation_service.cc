#include "server/evaluation_service.h"

#include <chrono>
#include <cstdio>

#include "sched/job_codec.h"

namespace kgym {

namespace {
double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// A submission the store could not take was not accepted: the client may send it again.
Status NotAccepted(const Status& s) {
  return Status::Unavailable("the job store could not take the job, so it was not accepted (" + s.message() +
                             "); retry");
}
// The jobs of stored records, as they are dispatched (records whose request no longer parses are left out).
std::vector<SchedJob> StoredJobs(const std::vector<JobRecord>& recs) {
  std::vector<SchedJob> jobs;
  for (const auto& rec : recs) {
    SchedJob job;
    if (!SchedJobFromJson(rec.request_json, &job).ok()) continue;
    job.id = rec.id;
    job.generation = rec.generation;
    job.attempts = rec.attempts;
    jobs.push_back(std::move(job));
  }
  return jobs;
}
bool IsSystemFailure(const JobRecord& r) {
  if (r.state != JobState::kDone) return false;
  auto j = nlohmann::json::parse(r.result_json, nullptr, false);
  return j.is_object() && j.value("outcome", "") == "invalid" && j["error_code"].is_string() &&
         j["error_code"] == "SYSTEM_ERROR";
}
}  // namespace

// In-memory state of a job that clients may be waiting on. Guarded by EvaluationService::mu_.
struct EvaluationService::Live {
  std::condition_variable cv;
  std::vector<JobEvent> events;
  int64_t next_seq = 1;
  bool done = false;
  double done_at = 0;
};

EvaluationService::EvaluationService(JobStore* store, Dispatcher* dispatcher, ServiceOptions options)
    : store_(store), dispatcher_(dispatcher), options_(options) {}

EvaluationService::~EvaluationService() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shut_down_ = true;
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

Status EvaluationService::Start(int* recovered) {
  started_at_ = SteadyNow();
  dispatcher_->SetUnfinishedSource([this] {
    std::vector<JobRecord> recs;
    Status s = store_->Unfinished(&recs);
    if (!s.ok()) std::fprintf(stderr, "kgym serve: listing unfinished jobs: %s\n", s.ToString().c_str());
    return StoredJobs(recs);
  });
  Status s = dispatcher_->Start(this);
  if (!s.ok()) return s;
  std::vector<JobRecord> queued;
  s = store_->Recover(&queued);
  if (!s.ok()) return s;
  *recovered = 0;
  for (const SchedJob& job : StoredJobs(queued)) {
    s = dispatcher_->Dispatch(job);
    if (!s.ok()) return s;
    ++*recovered;
  }
  sweeper_ = std::thread([this] { Sweep(); });
  return Status::Ok();
}

std::shared_ptr<EvaluationService::Live> EvaluationService::LiveFor(const std::string& id) {
  auto& p = live_[id];
  if (!p) p = std::make_shared<Live>();
  return p;
}

void EvaluationService::Emit(const std::string& id, const std::string& type, nlohmann::json data) {
  std::lock_guard<std::mutex> l(mu_);
  auto live = LiveFor(id);
  JobEvent e{live->next_seq++, type, std::move(data)};
  live->events.push_back(std::move(e));
  if (type == "done") {
    live->done = true;
    live->done_at = SteadyNow();
  }
  live->cv.notify_all();
}

void EvaluationService::FinishNow(const SchedJob& job, EvalResult result) { OnFinished(job, result); }

Status EvaluationService::Submit(const ParsedRequest& req, JobRecord* job, bool* created) {
  if (draining()) return Status::Unavailable("the server is draining for shutdown; retry on another server or later");
  SchedJob sj = req.job;
  JobRecord rec;
  rec.id = sj.id;
  rec.priority = static_cast<int>(sj.priority);
  rec.deadline = sj.deadline;
  rec.created_at = UnixNow();
  bool refresh = req.force_refresh;
  if (!refresh) {
    rec.request_json = SchedJobToJson(sj).dump();
    bool inserted = false;
    JobRecord existing;
    Status s = store_->Insert(rec, &inserted, &existing);
    if (!s.ok()) return NotAccepted(s);
    if (!inserted && !IsSystemFailure(existing)) {
      *job = existing;
      *created = false;
      std::lock_guard<std::mutex> l(mu_);
      stats_.deduplicated++;
      return Status::Ok();
    }
    refresh = !inserted;  // a stored infrastructure failure is not worth returning: run it again
  }
  std::unique_lock<std::mutex> refresh_lock(refresh_mu_, std::defer_lock);
  if (refresh) {
    refresh_lock.lock();
    sj.generation = 0;
    rec.request_json = SchedJobToJson(sj).dump();
    Status s = store_->Resubmit(&rec);  // generation + 1: a late result of the old run is refused
    if (!s.ok()) return NotAccepted(s);
    sj.generation = rec.generation;
    rec.request_json = SchedJobToJson(sj).dump();
    {
      std::lock_guard<std::mutex> l(mu_);
      auto live = LiveFor(sj.id);
      live->done = false;
      live->events.clear();
    }
    dispatcher_->Cancel(sj.id);  // stops the superseded run, if any
  } else {
    sj.generation = 1;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stats_.accepted++;
  }
  Emit(sj.id, "accepted", {{"generation", sj.generation}, {"priority", PriorityName(sj.priority)}});
  if (req.precheck_failure) {
    FinishNow(sj, *req.precheck_failure);
  } else {
    Status s = dispatcher_->Dispatch(sj);
    if (!s.ok()) {
      EvalResult r;
      r.task_id = sj.id;
      r.outcome = Outcome::kInvalid;
      r.error_code = "SYSTEM_ERROR";
      r.error_message = "could not queue the evaluation: " + s.message();
      FinishNow(sj, r);
    }
  }
  *created = true;
  return store_->Get(sj.id, job);
}

Status EvaluationService::Wait(const std::string& id, double timeout_s, JobRecord* job) {
  Status s = store_->Get(id, job);
  if (!s.ok() || job->state == JobState::kDone) return s;
  auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                      std::chrono::duration<double>(timeout_s));
  bool shut = false;
  {
    std::unique_lock<std::mutex> l(mu_);
    auto live = LiveFor(id);
    live->cv.wait_until(l, until, [&] { return live->done || shut_down_; });
    shut = shut_down_;
  }
  s = store_->Get(id, job);
  if (!s.ok() || job->state == JobState::kDone) return s;
  if (shut) return Status::Unavailable("the server shut down before the evaluation finished; retry");
  return Status::Timeout("not finished yet");
}

Status EvaluationService::Get(const std::string& id, JobRecord* job) { return store_->Get(id, job); }

Status EvaluationService::Cancel(const std::string& id, bool* cancelled) {
  JobRecord rec;
  Status s = store_->Get(id, &rec);
  if (!s.ok()) return s;
  *cancelled = false;
  if (rec.state == JobState::kDone) return Status::Ok();
  *cancelled = dispatcher_->Cancel(id);
  if (!*cancelled) {
    // Known to the store but not to the dispatcher (e.g. it is between retries in another node): finish it here.
    SchedJob j;
    j.id = id;
    j.generation = rec.generation;
    EvalResult r;
    r.task_id = id;
    r.outcome = Outcome::kInvalid;
    r.outcome_detail = "cancelled";
    r.error_message = "cancelled";
    FinishNow(j, r);
    *cancelled = true;
  }
  return Status::Ok();
}

void EvaluationService::Events(const std::string& id, int64_t after, double wait_s, std::vector<JobEvent>* out,
                               bool* done) {
  out->clear();
  std::unique_lock<std::mutex> l(mu_);
  auto live = LiveFor(id);
  auto pending = [&] { return (!live->events.empty() && live->events.back().seq > after) || live->done || shut_down_; };
  live->cv.wait_for(l, std::chrono::duration<double>(wait_s), pending);
  for (const auto& e : live->events)
    if (e.seq > after) out->push_back(e);
  *done = live->done || shut_down_;
}

void EvaluationService::OnStarted(const SchedJob& job, const std::string& device, int attempt) {
  Status s = store_->MarkRunning(job.id, job.generation, device, UnixNow());
  if (!s.ok() && s.code() != Status::Code::kNotFound)
    std::fprintf(stderr, "kgym serve: store: %s\n", s.ToString().c_str());
  Emit(job.id, "started", {{"device", device}, {"attempt", attempt}});
}

void EvaluationService::OnProgress(const SchedJob& job, const std::string& phase) {
  Emit(job.id, "phase", {{"phase", phase}});
}

void EvaluationService::OnRetry(const SchedJob& job, const EvalResult& failed, double delay_s) {
  std::fprintf(stderr, "kgym serve: %s: %s; retrying in %.1f s\n", job.id.c_str(), failed.outcome_detail.c_str(),
               delay_s);
  store_->MarkQueued(job.id, job.generation);
  Emit(job.id, "retry", {{"error_message", failed.error_message}, {"delay_s", delay_s}});
}

void EvaluationService::OnFinished(const SchedJob& job, const EvalResult& result) {
  EvalResult r = result;
  r.task_id = job.id;
  r.completed_at = KernelGymTimestamp();
  Unstored u{job,
             r.ToJson(false).dump(),
             r.outcome_detail == "cancelled" ? std::string("cancelled") : std::string(OutcomeName(r.outcome)),
             {{"outcome", OutcomeName(r.outcome)}, {"status", r.Status(false)}}};
  StoreResult(u);
}

bool EvaluationService::StoreResult(const Unstored& u) {
  const SchedJob& job = u.job;
  bool applied = false;
  Status s = store_->Complete(job.id, job.generation, u.result_json, UnixNow(), &applied);
  if (!s.ok()) {
    std::fprintf(stderr, "kgym serve: storing the result of %s: %s (kept; writing it again)\n", job.id.c_str(),
                 s.ToString().c_str());
    {
      std::lock_guard<std::mutex> l(mu_);
      stats_.store_failures++;
      unstored_[job.id] = u;
    }
    sweep_cv_.notify_all();
    return false;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = unstored_.find(job.id);
    if (it != unstored_.end() && it->second.job.generation <= job.generation) unstored_.erase(it);
  }
  if (!applied) return true;  // superseded generation or already done: exactly one result per generation
  JobRecord rec;
  double processing = 0;
  if (store_->Get(job.id, &rec).ok()) processing = rec.finished_at - rec.created_at;
  {
    std::lock_guard<std::mutex> l(mu_);
    stats_.completed++;
    stats_.total_processing_s += processing;
    stats_.outcomes[u.outcome_key]++;
  }
  Emit(job.id, "done", u.done_event);
  return true;
}

void EvaluationService::RetryUnstored() {
  std::map<std::string, Unstored> pending;
  {
    std::lock_guard<std::mutex> l(mu_);
    pending = unstored_;
  }
  for (const auto& [id, u] : pending)
    if (!StoreResult(u)) break;  // the store still refuses: later
}

void EvaluationService::BeginDrain() {
  std::lock_guard<std::mutex> l(mu_);
  draining_ = true;
}

bool EvaluationService::draining() const {
  std::lock_guard<std::mutex> l(mu_);
  return draining_;
}

int EvaluationService::Shutdown(double timeout_s, const std::atomic<bool>* cut_short) {
  BeginDrain();
  // In short waits, so a second signal (cut_short) ends the drain at once.
  const double deadline = SteadyNow() + std::max(0.0, timeout_s);
  int left = dispatcher_->Drain(0);
  while (left > 0 && !(cut_short && cut_short->load())) {
    const double rest = deadline - SteadyNow();
    if (rest <= 0) break;
    left = dispatcher_->Drain(std::min(0.1, rest));
  }
  dispatcher_->Stop();
  {
    std::lock_guard<std::mutex> l(mu_);
    shut_down_ = true;
    for (auto& [id, live] : live_) live->cv.notify_all();
  }
  sweep_cv_.notify_all();
  return left;
}

void EvaluationService::Sweep() {
  std::unique_lock<std::mutex> l(mu_);
  double last_expiry = SteadyNow();
  while (!shut_down_) {
    const double wait = unstored_.empty() ? options_.sweep_interval_s : options_.retry_store_s;
    sweep_cv_.wait_for(l, std::chrono::duration<double>(wait));
    if (shut_down_) break;
    l.unlock();
    RetryUnstored();
    l.lock();
    if (SteadyNow() - last_expiry < options_.sweep_interval_s) continue;
    last_expiry = SteadyNow();
    l.unlock();
    int removed = 0;
    Status s = store_->ExpireFinished(UnixNow() - options_.result_ttl_s, &removed);
    if (!s.ok()) std::fprintf(stderr, "kgym serve: expiring results: %s\n", s.ToString().c_str());
    l.lock();
    stats_.expired += removed;
    double now = SteadyNow();
    for (auto it = live_.begin(); it != live_.end();) {
      // Forget finished jobs nobody waits on; the store still answers for them.
      if (it->second->done && now - it->second->done_at > 60 && it->second.use_count() == 1)
        it = live_.erase(it);
      else
        ++it;
    }
  }
}

ServiceStats EvaluationService::Stats() {
  DispatchStats d = dispatcher_->Stats();
  std::lock_guard<std::mutex> l(mu_);
  ServiceStats s = stats_;
  s.dispatch = std::move(d);
  s.uptime_s = SteadyNow() - started_at_;
  return s;
}

}  // namespace kgym
