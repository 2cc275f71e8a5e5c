// RedisDispatcher: the API node's side of many-node mode. Jobs go into the Redis queue; a collector thread
// takes finished jobs from Redis, reports them to the listener (which writes them to the local store) and only
// then acknowledges them, so a crash between the two re-delivers instead of losing a result. The same thread
// re-queues jobs whose worker stopped heartbeating.
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

  Status Start(SchedulerListener* listener) override {
    listener_ = listener;
    Status s = RedisJobQueue::Connect(url_, prefix_, &q_);
    if (s.ok()) s = RedisJobQueue::Connect(url_, prefix_, &collector_q_);
    if (!s.ok()) return s;
    int moved = 0;
    s = collector_q_->RecoverUnacknowledged(&moved);
    if (!s.ok()) return s;
    collector_ = std::thread([this] { Collect(); });
    return Status::Ok();
  }

  Status Dispatch(const SchedJob& job) override {
    bool enqueued = false;
    std::lock_guard<std::mutex> l(mu_);
    return q_->Enqueue(job.id, job.generation, static_cast<int>(job.priority), SchedJobToJson(job).dump(), &enqueued);
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
  void Collect() {
    auto last_reap = std::chrono::steady_clock::now();
    while (!stop_) {
      std::optional<FinishedJob> f;
      Status s = collector_q_->NextFinished(0.5, &f);
      if (!s.ok()) {
        std::fprintf(stderr, "kgym serve: redis: %s\n", s.ToString().c_str());
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
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
};
}  // namespace

std::unique_ptr<Dispatcher> NewRedisDispatcher(const std::string& redis_url, const std::string& prefix,
                                               double reap_interval_s) {
  return std::make_unique<RedisDispatcher>(redis_url, prefix, reap_interval_s);
}

}  // namespace kgym
