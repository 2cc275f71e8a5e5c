#include "sched/redis_worker.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "sched/job_codec.h"
#include "store/redis_queue.h"

namespace kgym {

namespace {
// Bridges scheduler callbacks to Redis: completions go back through one guarded connection. A completion Redis did
// not take (it was out of reach) is kept, the job still held (its lease renewed), and delivered by Deliver() later.
// A run whose lease was found lost (LeaseLost) was cancelled for that reason: its "cancelled" result is dropped, never
// delivered, since this worker may meanwhile hold the job again under a new claim (Redis restarted empty and the API
// node queued the job again), and Redis would then take that result as the job's.
class CompletionSink : public SchedulerListener {
 public:
  CompletionSink(std::unique_ptr<RedisJobQueue> q, std::string worker) : q_(std::move(q)), worker_(std::move(worker)) {}
  void OnStarted(const SchedJob&, const std::string&, int) override {}
  void OnProgress(const SchedJob&, const std::string&) override {}
  void OnRetry(const SchedJob& job, const EvalResult& r, double delay) override {
    std::fprintf(stderr, "kgym worker: %s: %s; retrying in %.1fs\n", job.id.c_str(), r.error_message.c_str(), delay);
  }
  void OnFinished(const SchedJob& job, const EvalResult& r) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      Job& h = jobs_[job.id];
      h.runs = std::max(0, h.runs - 1);
      if (r.outcome_detail == "cancelled" && h.lost_runs > 0) {
        --h.lost_runs;
        std::fprintf(stderr, "kgym worker: %s: dropped a run's result: its lease was lost\n", job.id.c_str());
      } else {
        h.undelivered = Completion{job.generation, r.ToJson(false).dump()};
        DeliverLocked(job.id);
      }
      Forget(job.id);
    }
    cv_.notify_all();
  }
  // Tries again to hand Redis the completions it did not take.
  void Deliver() {
    {
      std::lock_guard<std::mutex> l(mu_);
      std::vector<std::string> ids;
      for (const auto& [id, h] : jobs_)
        if (h.undelivered) ids.push_back(id);
      for (const auto& id : ids) {
        if (!DeliverLocked(id)) break;
        Forget(id);
      }
    }
    cv_.notify_all();
  }
  // A claim: one more run of the job here.
  void Hold(const std::string& id, int64_t gen) {
    std::lock_guard<std::mutex> l(mu_);
    Job& h = jobs_[id];
    h.generation = gen;
    ++h.runs;
  }
  // The heartbeat found the job's lease lost: the runs here now are being stopped.
  void LeaseLost(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) it->second.lost_runs = it->second.runs;
  }
  // The jobs held (running here, or their result not yet delivered): id -> generation.
  std::map<std::string, int64_t> Held() {
    std::lock_guard<std::mutex> l(mu_);
    std::map<std::string, int64_t> out;
    for (const auto& [id, h] : jobs_) out[id] = h.generation;
    return out;
  }
  size_t HeldCount() {
    std::lock_guard<std::mutex> l(mu_);
    return jobs_.size();
  }
  size_t UndeliveredCount() {
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    for (const auto& [id, h] : jobs_) n += h.undelivered.has_value();
    return n;
  }
  // Waits until fewer than `limit` jobs are held or timeout.
  void WaitBelow(size_t limit, int64_t timeout_ms) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(timeout_ms), [&] { return jobs_.size() < limit; });
  }

 private:
  struct Completion {
    int64_t generation;
    std::string result;
  };
  struct Job {
    int64_t generation = 0;
    int runs = 0;       // evaluations of it running here (a lost lease's run and a new claim's may overlap)
    int lost_runs = 0;  // of those, the ones stopped because the lease was lost
    std::optional<Completion> undelivered;
  };
  // mu_ held. True when Redis answered (the result recorded, or refused because the lease is no longer ours).
  bool DeliverLocked(const std::string& id) {
    Job& h = jobs_.at(id);
    bool accepted = false;
    Status s = q_->Complete(id, worker_, h.undelivered->generation, h.undelivered->result, &accepted);
    if (!s.ok()) {
      std::fprintf(stderr, "kgym worker: completing %s: %s (kept; trying again)\n", id.c_str(), s.ToString().c_str());
      return false;
    }
    h.undelivered.reset();
    return true;
  }
  // mu_ held: a job with no run here and nothing to deliver is no longer held.
  void Forget(const std::string& id) {
    auto it = jobs_.find(id);
    if (it != jobs_.end() && it->second.runs == 0 && !it->second.undelivered) jobs_.erase(it);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<RedisJobQueue> q_;
  std::string worker_;
  std::map<std::string, Job> jobs_;
};
// The jobs still held at a stop go back to the queue now rather than when their leases expire: each lease is cut to
// 1 ms and reaped (a result that reaches Redis later is refused, so each generation completes once).
void GiveBack(RedisJobQueue* q, const std::string& me, const std::map<std::string, int64_t>& held) {
  if (held.empty()) return;
  for (const auto& [id, gen] : held) {
    LeaseState st;
    (void)q->Heartbeat(id, me, 1, &st);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int requeued = 0;
  if (q->ReapExpiredLeases(&requeued).ok() && requeued > 0)
    std::fprintf(stderr, "kgym worker: %d job(s) back in the queue\n", requeued);
}

}  // namespace

RedisWorker::RedisWorker(Evaluator* evaluator, RedisWorkerOptions options)
    : evaluator_(evaluator), options_(std::move(options)) {
  if (options_.worker_id.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    options_.worker_id = std::string(host) + ":" + std::to_string(getpid());
  }
  if (options_.heartbeat_ms <= 0) options_.heartbeat_ms = std::max<int64_t>(1, options_.lease_ms / 3);
}

Status RedisWorker::Run(const std::atomic<bool>* stop, double drain_timeout_s, const std::atomic<bool>* cut_short,
                        int* stopped) {
  std::unique_ptr<RedisJobQueue> claimer, completer, beater;
  Status s = RedisJobQueue::Connect(options_.redis_url, options_.prefix, &claimer);
  if (s.code() == Status::Code::kUnavailable) {
    std::fprintf(stderr, "kgym worker: %s; waiting for it\n", s.message().c_str());
    s = RedisJobQueue::Open(options_.redis_url, options_.prefix, &claimer);
  }
  if (s.ok()) s = RedisJobQueue::Open(options_.redis_url, options_.prefix, &completer);
  if (s.ok()) s = RedisJobQueue::Open(options_.redis_url, options_.prefix, &beater);
  if (!s.ok()) return s;
  const std::string& me = options_.worker_id;
  CompletionSink sink(std::move(completer), me);
  SchedulerOptions so;
  so.devices = options_.devices;
  so.max_retries = options_.max_retries;
  so.retry_backoff_s = options_.retry_backoff_s;
  Scheduler sched(evaluator_, so, &sink);
  sched.Start();
  size_t capacity = 0;
  for (auto& d : options_.devices) capacity += static_cast<size_t>(std::max(1, d.slots));

  bool beating = true;  // guarded by beat_mu; the heartbeat's wait ends at once when it turns false
  std::mutex beat_mu;
  std::condition_variable beat_cv;
  std::thread heartbeat([&] {
    for (;;) {
      {
        std::lock_guard<std::mutex> l(beat_mu);
        if (!beating) break;
      }
      sink.Deliver();
      for (auto& [id, gen] : sink.Held()) {
        LeaseState st;
        if (!beater->Heartbeat(id, me, options_.lease_ms, &st).ok()) continue;
        if (st == LeaseState::kLost) sink.LeaseLost(id);  // the job now belongs elsewhere, or to a new claim
        if (st != LeaseState::kHeld) sched.Cancel(id);
      }
      int requeued = 0;
      beater->ReapExpiredLeases(&requeued);
      if (requeued > 0) std::fprintf(stderr, "kgym worker: re-queued %d job(s) with expired leases\n", requeued);
      std::unique_lock<std::mutex> l(beat_mu);
      beat_cv.wait_for(l, std::chrono::milliseconds(options_.heartbeat_ms), [&] { return !beating; });
    }
  });

  std::fprintf(stderr, "kgym worker %s: pulling from %s (%zu slots)\n", me.c_str(), options_.redis_url.c_str(),
               capacity);
  bool claim_failing = false;
  while (!stop->load()) {
    if (sink.HeldCount() >= capacity) {
      sink.WaitBelow(capacity, options_.poll_ms);
      continue;
    }
    std::optional<ClaimedJob> job;
    s = claimer->Claim(me, options_.lease_ms, &job);
    if (!s.ok()) {
      if (!claim_failing) std::fprintf(stderr, "kgym worker: claim: %s (trying again)\n", s.ToString().c_str());
      claim_failing = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      continue;
    }
    if (claim_failing) std::fprintf(stderr, "kgym worker: redis answers again\n");
    claim_failing = false;
    if (!job) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
      continue;
    }
    SchedJob sj;
    Status ps = SchedJobFromJson(job->payload, &sj);
    sj.id = job->id;
    sj.generation = job->generation;
    sj.attempts = 0;
    sink.Hold(sj.id, sj.generation);
    if (ps.ok() && !sj.device.empty()) {
      bool known = false;
      for (auto& d : options_.devices) known |= d.name == sj.device;
      if (!known) sj.device.clear();  // a pin names a device of another node; any of ours will do
    }
    if (!ps.ok()) {
      EvalResult bad;
      bad.task_id = sj.id;
      bad.outcome = Outcome::kInvalid;
      bad.error_code = "SYSTEM_ERROR";
      bad.error_message = ps.message();
      sink.OnFinished(sj, bad);
      continue;
    }
    sched.Submit(sj);
  }
  // Graceful drain: no new claims; running jobs finish and report, heartbeats continue meanwhile, until the drain's
  // deadline or *cut_short. Results Redis will not take are given up a lease's length after the last evaluation ended.
  const auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                     std::chrono::duration<double>(drain_timeout_s));
  auto evaluations_ended = std::chrono::steady_clock::now();
  while (sink.HeldCount() > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (sink.HeldCount() > sink.UndeliveredCount()) {
      evaluations_ended = now;
      if (now >= drain_deadline || (cut_short && cut_short->load())) {
        std::fprintf(stderr, "kgym worker: stopping %zu evaluation(s) still running; their jobs go back to the queue\n",
                     sink.HeldCount() - sink.UndeliveredCount());
        break;
      }
    }
    if (now - evaluations_ended > std::chrono::milliseconds(options_.lease_ms)) {
      std::fprintf(stderr, "kgym worker: redis did not take %zu result(s); their jobs will run again elsewhere\n",
                   sink.UndeliveredCount());
      break;
    }
    sink.WaitBelow(1, 200);
  }
  sched.Stop();  // a stopped evaluation reports nothing: its job is still leased here
  {
    std::lock_guard<std::mutex> l(beat_mu);
    beating = false;
  }
  beat_cv.notify_all();
  heartbeat.join();
  const auto held = sink.Held();
  GiveBack(beater.get(), me, held);
  if (stopped) *stopped = static_cast<int>(held.size());
  return Status::Ok();
}

}  // namespace kgym
