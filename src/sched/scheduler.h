// Scheduler: decides which evaluation runs where and when, in-process. Each device ("cpu", "cuda:0", ...)
// has a fixed number of slots (evaluations in flight at once: default 4 per GPU, 2 for cpu); the Evaluator
// itself serialises the timing phase per device with its TimingLock, so slots overlap only loading, compiling
// and correctness. A job pinned to a device waits in that device's queue; other jobs wait in a shared queue
// that every device drains. Order within a queue: priority (high > normal > low), then the earlier deadline,
// then arrival.
//
// Deadlines: a job whose deadline passes before it starts finishes as "timeout" without running; a running
// job gets at most the time left as its evaluation timeout. Cancel() removes a queued job or raises the
// running evaluation's cancel flag. Infrastructure failures (outcome "invalid" with error_code SYSTEM_ERROR)
// are retried with exponential backoff up to max_retries times; failures of the candidate never are.
//
// Reference look-ahead: each device has `reference_lookahead` threads that prepare the reference data of the jobs
// next in its queues (the next `slots` of them, in queue order) through Evaluator::PrepareReference, each reference
// configuration once, so the evaluations of a task that waits behind another one find its reference ready instead
// of all waiting for it when they start (the device's timing lock would idle meanwhile). The look-ahead takes no
// slot; a job that starts while its reference is still being prepared waits for that computation, not a second one.
// Whatever reference_lookahead is, the evaluator hears the reference configurations of each device's running jobs
// and next `slots` queued ones whenever they change (Evaluator::WantReferences), so its cache keeps them.
//
// Thread-safe. Listener callbacks run on slot threads (or the caller's thread for Cancel of a queued job)
// without scheduler locks held; they must not block for long.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/evaluation.h"
#include "eval/evaluator.h"

namespace kgym {

enum class Priority { kLow = 0, kNormal = 1, kHigh = 2 };
const char* PriorityName(Priority p);
bool PriorityFromName(const std::string& name, Priority* out);

struct SchedJob {
  std::string id;
  int64_t generation = 1;
  EvalRequest request;  // device/device_index are filled in by the scheduler
  Priority priority = Priority::kNormal;
  double deadline = 0;  // unix seconds; 0 = none
  std::string device;   // pin to this device ("cuda:1"); "" = any
  int attempts = 0;     // attempts already made (a recovered job keeps its count)
};

class SchedulerListener {
 public:
  virtual ~SchedulerListener() = default;
  // The job is about to be evaluated on `device` (attempt counts from 1).
  virtual void OnStarted(const SchedJob& job, const std::string& device, int attempt) = 0;
  virtual void OnProgress(const SchedJob& job, const std::string& phase) = 0;
  // An infrastructure failure; the job runs again after delay_s.
  virtual void OnRetry(const SchedJob& job, const EvalResult& failed, double delay_s) = 0;
  // Final result (also for cancelled and expired jobs). Called exactly once per submitted job, unless
  // Stop() interrupted it (then the job is left for recovery).
  virtual void OnFinished(const SchedJob& job, const EvalResult& result) = 0;
};

struct DeviceSlots {
  std::string name;  // "cpu" or "cuda:N"
  int slots = 1;
};

struct SchedulerOptions {
  std::vector<DeviceSlots> devices;
  int max_retries = 2;
  double retry_backoff_s = 1.0;  // first retry delay; doubles each time
  double retry_backoff_max_s = 30.0;
  int reference_lookahead = 1;  // look-ahead threads per device (0 = none)
};

// Parses "--gpus": "none" -> cpu, "all" -> every entry of `available` that is a cuda device, "0,2" -> cuda:0,
// cuda:2. slots_per_gpu / cpu_slots give the slot counts.
Status ParseDeviceList(const std::string& gpus, const std::vector<std::string>& available, int slots_per_gpu,
                       int cpu_slots, std::vector<DeviceSlots>* out);

struct PhaseStat {
  int64_t count = 0;
  double total_s = 0;
};

struct SchedulerStats {
  int64_t queued = 0;
  int64_t running = 0;
  int64_t retrying = 0;                     // waiting out a backoff
  int64_t waiting_memory = 0;               // of `running`: on a slot, but still waiting for memory admission
  std::map<std::string, int64_t> outcomes;  // outcome name -> finished count
  int64_t retries = 0;
  std::map<std::string, PhaseStat> phases;  // time spent in each evaluation phase
  struct Device {
    std::string name;
    int slots = 0;
    int running = 0;
    double busy_s = 0;  // wall time with at least one evaluation in flight
    double uptime_s = 0;
    int64_t references_prepared = 0;  // by the reference look-ahead (made, found kept, or waited for)
    double reference_prepare_s = 0;
  };
  std::vector<Device> devices;
};

class Scheduler {
 public:
  // `evaluator` and `listener` must outlive the scheduler.
  Scheduler(Evaluator* evaluator, SchedulerOptions options, SchedulerListener* listener);
  ~Scheduler();  // Stop()s

  void Start();
  // Queues a job. InvalidArgument if it is pinned to a device this scheduler does not have.
  Status Submit(SchedJob job);
  // True if the job was queued (it finishes at once as cancelled) or running (its evaluation is told to stop).
  bool Cancel(const std::string& id);
  // Stops taking queued jobs and waits up to timeout_s for running ones; returns the number still running.
  int Drain(double timeout_s);
  // Cancels running evaluations and joins the slot threads. Queued jobs are dropped without callbacks
  // (they are in the store and are recovered on the next start).
  void Stop();

  SchedulerStats Stats() const;

 private:
  struct Entry;
  struct Queue;
  struct Device;
  void SlotLoop(Device* dev);
  bool PopFor(Device* dev, std::unique_ptr<Entry>* out);
  void RunOne(Device* dev, std::unique_ptr<Entry> e);
  void Enqueue(std::unique_ptr<Entry> e);
  void RecordPhase(Entry* e, const std::string& phase);
  void LookaheadLoop(Device* dev);
  bool NextToPrepare(Device* dev, EvalRequest* out);  // mu_ held
  std::vector<Entry*> Window(Device* dev);            // mu_ held: the next `slots` jobs it would take
  const std::string& KeyOn(Entry* e, Device* dev);    // mu_ held
  void WantNext(Device* dev);                         // mu_ held: the references it needs kept
  void WantNextAll();                                 // mu_ held
  void TellWants();                                   // mu_ not held: passes changed sets to the evaluator

  Evaluator* evaluator_;
  SchedulerOptions options_;
  SchedulerListener* listener_;

  mutable std::mutex mu_;
  std::mutex want_mu_;  // TellWants' calls one at a time; taken before mu_, never while holding it
  std::condition_variable cv_, idle_cv_, lookahead_cv_;
  std::atomic<bool> lookahead_cancel_{false};  // Stop(): ends the look-ahead's waits for memory
  bool started_ = false, stopping_ = false, draining_ = false;
  uint64_t seq_ = 0;
  std::unique_ptr<Queue> shared_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::multimap<double, std::unique_ptr<Entry>> delayed_;  // retry due time (steady seconds) -> job
  std::multimap<std::string, Entry*> running_;             // by job id (two generations may overlap)
  std::map<std::string, int64_t> outcomes_;
  std::map<std::string, PhaseStat> phases_;
  int64_t retries_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace kgym
