// EvaluationService: the server's core, below HTTP. It accepts jobs (idempotent by id: a repeated id returns
// the stored job unless force_refresh starts a new generation), writes each to the JobStore before it
// acknowledges it, hands it to a Dispatcher, records progress and results in the store, and wakes the clients
// waiting on a job (blocking POST /evaluate, long-poll, server-sent events).
//
// On Start() jobs that the store holds as queued or running (a previous process was killed) are dispatched
// again. Results older than result_ttl_s are deleted. BeginDrain() refuses new jobs (Unavailable) while
// running ones finish.
//
// When the store fails (disk full, an I/O error, busy): a submission it cannot store is refused with Unavailable
// (nothing accepted: the client retries); a result it cannot store is kept here and written again every
// retry_store_s until the store takes it, and only then do waiting clients hear of it (a process killed meanwhile
// loses only that copy: the job is still unfinished in the store and runs again after the restart).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/dispatcher.h"
#include "server/request_parse.h"
#include "store/job_store.h"

namespace kgym {

struct ServiceOptions {
  double result_ttl_s = 7 * 24 * 3600.0;
  double sweep_interval_s = 60;
  double retry_store_s = 0.5;  // results the store did not take are written again this often
};

struct JobEvent {
  int64_t seq = 0;
  std::string type;  // accepted | started | phase | retry | done
  nlohmann::json data;
};

struct ServiceStats {
  std::map<std::string, int64_t> outcomes;  // final outcomes since start ("cancelled" separately)
  int64_t accepted = 0, deduplicated = 0, completed = 0, expired = 0;
  int64_t store_failures = 0;     // writes of a result the store refused (each written again until it took it)
  double total_processing_s = 0;  // sum over completed jobs of finished_at - created_at
  double uptime_s = 0;
  DispatchStats dispatch;
};

class EvaluationService : public SchedulerListener {
 public:
  // `store` and `dispatcher` must outlive the service.
  EvaluationService(JobStore* store, Dispatcher* dispatcher, ServiceOptions options);
  ~EvaluationService() override;

  // Starts the dispatcher, re-dispatches recovered jobs and starts the TTL sweeper.
  Status Start(int* recovered);

  // Accepts a parsed request. *created is false when an existing job with that id was returned as is.
  Status Submit(const ParsedRequest& req, JobRecord* job, bool* created);

  // Blocks until the job is done or timeout_s passes. Returns Timeout if not done, Unavailable if the service
  // shut down meanwhile, NotFound for an unknown id. *job holds the latest record either way.
  Status Wait(const std::string& id, double timeout_s, JobRecord* job);

  Status Get(const std::string& id, JobRecord* job);

  // *cancelled is true if a queued or running job was told to stop. NotFound for an unknown id.
  Status Cancel(const std::string& id, bool* cancelled);

  // Events of a job with seq > after, waiting up to wait_s for new ones; *done once the job has finished.
  void Events(const std::string& id, int64_t after, double wait_s, std::vector<JobEvent>* out, bool* done);

  void BeginDrain();
  bool draining() const;
  // Drains the dispatcher (new jobs refused, queued ones stay queued) until its running evaluations have finished,
  // timeout_s has passed or *cut_short (may be null) becomes true; then stops it (evaluations still running are
  // stopped: their jobs stay unfinished in the store, for the next start) and wakes every waiter with Unavailable.
  // Returns how many evaluations were stopped so.
  int Shutdown(double timeout_s, const std::atomic<bool>* cut_short = nullptr);

  ServiceStats Stats();

  // The store the service writes to, for read-only queries (the dashboard's job list).
  JobStore* store() const { return store_; }

  // SchedulerListener: called by the dispatcher.
  void OnStarted(const SchedJob& job, const std::string& device, int attempt) override;
  void OnProgress(const SchedJob& job, const std::string& phase) override;
  void OnRetry(const SchedJob& job, const EvalResult& failed, double delay_s) override;
  void OnFinished(const SchedJob& job, const EvalResult& result) override;

 private:
  struct Live;
  std::shared_ptr<Live> LiveFor(const std::string& id);  // mu_ held
  void Emit(const std::string& id, const std::string& type, nlohmann::json data);
  void FinishNow(const SchedJob& job, EvalResult result);
  // A finished job's result, as stored, counted and announced.
  struct Unstored {
    SchedJob job;
    std::string result_json, outcome_key;
    nlohmann::json done_event;
  };
  // Stores a finished job's result; false (the result kept in unstored_) when the store failed.
  bool StoreResult(const Unstored& u);
  void RetryUnstored();
  void Sweep();

  JobStore* store_;
  Dispatcher* dispatcher_;
  ServiceOptions options_;
  mutable std::mutex mu_;
  std::mutex refresh_mu_;
  std::condition_variable sweep_cv_;
  std::map<std::string, std::shared_ptr<Live>> live_;
  std::map<std::string, Unstored> unstored_;  // results the store did not take yet, by job id
  bool draining_ = false, shut_down_ = false;
  ServiceStats stats_;
  double started_at_ = 0;
  std::thread sweeper_;
};

}  // namespace kgym
