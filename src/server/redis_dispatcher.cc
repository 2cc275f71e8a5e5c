// RedisDispatcher: the API node's side of many-node mode. Jobs go into the Redis queue; a collector thread
// takes finished jobs from Redis, reports them to the listener (which writes them to the local store) and only
// then acknowledges them, so a crash between the two re-delivers instead of losing a result. The same thread
// re-queues jobs whose worker stopped heartbeating.
//
// Redis going away loses no job. The store holds every accepted job; a job that cannot be queued (Redis down) is
// queued when Redis is back, and whenever the collector connects again (Redis restarted, and without persistence
// it restarted empty) every job the store holds unfinished is queued again: each generation at most once, so the
// jobs Redis still holds are left as they are. Jobs Redis lost while a worker ran them are lost to that worker too
// (its next heartbeat finds no lease and stops the evaluation), and run again.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "sched/job_codec.h"
#include "server/dispatcher.h"
#include "store/redis_queue.h"

namespace kgym {

namespace {
class RedisDispatcher : public Dispatcher {
 public:
  RedisDispatcher(std::string url, std::string prefix, double reap_s)
      : url_(std::move(url)), prefix_(std::move(prefix)), reap_s_(reap_s) {}
  ~RedisDispatcher() override { Stop(); }

  void SetUnfinishedSource(std::function<std::vector<SchedJob>()> source) override { unfinished_ = std::move(source); }

  Status Start(SchedulerListener* listener) override {
    listener_ = listener;
    Status s = RedisJobQueue::Open(url_, prefix_, &q_);
    if (s.ok()) s = RedisJobQueue::Connect(url_, prefix_, &collector_q_);
    if (s.code() == Status::Code::kUnavailable) {
      std::fprintf(stderr, "kgym serve: %s; accepted jobs wait until it answers\n", s.message().c_str());
      s = RedisJobQueue::Open(url_, prefix_, &collector_q_);
    }
    if (!s.ok()) return s;
    collector_ = std::thread([this] { Collect(); });
    return Status::Ok();
  }

  Status Dispatch(const SchedJob& job) override {
    bool enqueued = false;
    Status s;
    {
      std::lock_guard<std::mutex> l(mu_);
      s = q_->Enqueue(job.id, job.generation, static_cast<int>(job.priority), SchedJobToJson(job).dump(), &enqueued);
    }
    if (s.code() != Status::Code::kUnavailable) return s;
    // Stored, not queued: the collector queues it once Redis answers again.
    if (!resync_.exchange(true))
      std::fprintf(stderr, "kgym serve: %s; queueing waits for redis\n", s.message().c_str());
    return Status::Ok();
  }

  bool Cancel(const std::string& id) override {
    bool was_queued = false, was_running = false;
    int64_t generation = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!q_->Cancel(id, &was_queued, &was_running, &generation).ok()) return false;
    }
    if (was_queued) {
      SchedJob j;
      j.id = id;
      j.generation = generation;
      EvalResult r;
      r.task_id = id;
      r.outcome = Outcome::kInvalid;
      r.outcome_detail = "cancelled";
      r.error_message = "cancelled";
      listener_->OnFinished(j, r);
    }
    return was_queued || was_running;
  }

  int Drain(double) override { return 0; }  // evaluations run on the workers; they drain themselves

  void Stop() override {
    stop_ = true;
    if (collector_.joinable()) collector_.join();
  }

  DispatchStats Stats() override {
    DispatchStats s;
    int64_t queued = 0, leased = 0;
    std::lock_guard<std::mutex> l(mu_);
    if (q_ && q_->QueueDepth(&queued, &leased).ok()) {
      s.sched.queued = queued;
      s.sched.running = leased;
    }
    return s;
  }

 private:
  // After a (re)connection or a job that could not be queued: finished jobs taken but not acknowledged go back to
  // the done list, and every unfinished job of the store is queued (again).
  Status Resync() {
    int moved = 0;
    Status s = collector_q_->RecoverUnacknowledged(&moved);
    int queued = 0;
    if (s.ok() && unfinished_) {
      for (const SchedJob& job : unfinished_()) {
        bool enqueued = false;
        s = collector_q_->Enqueue(job.id, job.generation, static_cast<int>(job.priority), SchedJobToJson(job).dump(),
                                  &enqueued);
        if (!s.ok()) break;
        queued += enqueued;
      }
    }
    if (s.ok() && queued > 0) std::fprintf(stderr, "kgym serve: queued %d stored job(s) redis did not hold\n", queued);
    return s;
  }

  void Collect() {
    auto last_reap = std::chrono::steady_clock::now();
    int64_t synced_connections = 0;
    bool failing = false;
    while (!stop_) {
      std::optional<FinishedJob> f;
      Status s = Status::Ok();
      if (resync_.exchange(false) || collector_q_->connections() != synced_connections) {
        s = Resync();  // a connection can only have been made again at its start: it covers that connection
        if (s.ok()) synced_connections = collector_q_->connections();
        if (!s.ok()) resync_ = true;
      }
      if (s.ok()) s = collector_q_->NextFinished(0.5, &f);
      if (!s.ok()) {
        if (!failing) std::fprintf(stderr, "kgym serve: redis: %s (trying again)\n", s.ToString().c_str());
        failing = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      if (failing) std::fprintf(stderr, "kgym serve: redis answers again\n");
      failing = false;
      if (f) {
        SchedJob j;
        j.id = f->id;
        j.generation = f->generation;
        auto parsed = nlohmann::json::parse(f->result_json, nullptr, false);
        EvalResult r;
        if (parsed.is_object()) {
          r = EvalResult::FromJson(parsed);
        } else {
          r.outcome = Outcome::kInvalid;
          r.error_code = "SYSTEM_ERROR";
          r.error_message = "worker returned an unreadable result";
        }
        r.task_id = f->id;
        listener_->OnFinished(j, r);
        collector_q_->Acknowledge(*f);
      }
      if (std::chrono::steady_clock::now() - last_reap > std::chrono::duration<double>(reap_s_)) {
        int n = 0;
        collector_q_->ReapExpiredLeases(&n);
        if (n > 0) std::fprintf(stderr, "kgym serve: re-queued %d job(s) whose worker stopped heartbeating\n", n);
        last_reap = std::chrono::steady_clock::now();
      }
    }
  }

  std::string url_, prefix_;
  double reap_s_;
  SchedulerListener* listener_ = nullptr;
  std::mutex mu_;
  std::unique_ptr<RedisJobQueue> q_, collector_q_;
  std::thread collector_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> resync_{false};  // a job could not be queued
  std::function<std::vector<SchedJob>()> unfinished_;
};
}  // namespace

std::unique_ptr<Dispatcher> NewRedisDispatcher(const std::string& redis_url, const std::string& prefix,
                                               double reap_interval_s) {
  return std::make_unique<RedisDispatcher>(redis_url, prefix, reap_interval_s);
}

}  // namespace kgym
