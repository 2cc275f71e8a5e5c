#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <thread>

#include "eval/simulated_evaluator.h"

namespace kgym {
namespace {

class RecordingListener : public SchedulerListener {
 public:
  void OnStarted(const SchedJob& job, const std::string& device, int) override {
    std::lock_guard<std::mutex> l(mu);
    started.push_back(job.id);
    devices[job.id] = device;
    cv.notify_all();
  }
  void OnProgress(const SchedJob& job, const std::string& phase) override {
    std::lock_guard<std::mutex> l(mu);
    phases[job.id].push_back(phase);
  }
  void OnRetry(const SchedJob& job, const EvalResult&, double delay) override {
    std::lock_guard<std::mutex> l(mu);
    retry_delays[job.id].push_back(delay);
  }
  void OnFinished(const SchedJob& job, const EvalResult& r) override {
    std::lock_guard<std::mutex> l(mu);
    finished.push_back(job.id);
    results[job.id].push_back(r);
    cv.notify_all();
  }
  bool WaitFinished(size_t n, double timeout_s = 10) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::duration<double>(timeout_s), [&] { return finished.size() >= n; });
  }
  bool WaitStarted(size_t n, double timeout_s = 10) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::duration<double>(timeout_s), [&] { return started.size() >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> started, finished;
  std::map<std::string, std::string> devices;
  std::map<std::string, std::vector<std::string>> phases;
  std::map<std::string, std::vector<double>> retry_delays;
  std::map<std::string, std::vector<EvalResult>> results;
};

SchedJob Job(const std::string& id, const std::string& code = "", Priority p = Priority::kNormal) {
  SchedJob j;
  j.id = id;
  j.request.task_id = id;
  j.request.kernel_code = code;
  j.priority = p;
  return j;
}

TEST(ParseDeviceList, Forms) {
  std::vector<DeviceSlots> d;
  ASSERT_TRUE(ParseDeviceList("none", {}, 4, 2, &d).ok());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "cpu");
  EXPECT_EQ(d[0].slots, 2);
  ASSERT_TRUE(ParseDeviceList("0,3", {}, 4, 2, &d).ok());
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].name, "cuda:3");
  EXPECT_EQ(d[1].slots, 4);
  ASSERT_TRUE(ParseDeviceList("all", {"cpu", "cuda:0", "cuda:1"}, 3, 2, &d).ok());
  EXPECT_EQ(d.size(), 2u);
  EXPECT_FALSE(ParseDeviceList("all", {"cpu"}, 3, 2, &d).ok());
  EXPECT_FALSE(ParseDeviceList("0,x", {}, 3, 2, &d).ok());
}

TEST(Scheduler, HighPriorityRunsFirstThenFifo) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 1}}}, &li);
  // Queue everything before starting so the order is decided by the queue alone.
  ASSERT_TRUE(s.Submit(Job("low", "", Priority::kLow)).ok());
  ASSERT_TRUE(s.Submit(Job("n1")).ok());
  ASSERT_TRUE(s.Submit(Job("high", "", Priority::kHigh)).ok());
  ASSERT_TRUE(s.Submit(Job("n2")).ok());
  s.Start();
  ASSERT_TRUE(li.WaitFinished(4));
  EXPECT_EQ(li.started, (std::vector<std::string>{"high", "n1", "n2", "low"}));
}

TEST(Scheduler, EarlierDeadlineFirstWithinAPriority) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 1}}}, &li);
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  SchedJob late = Job("late"), soon = Job("soon"), none = Job("none");
  late.deadline = now + 1000;
  soon.deadline = now + 100;
  ASSERT_TRUE(s.Submit(none).ok());
  ASSERT_TRUE(s.Submit(late).ok());
  ASSERT_TRUE(s.Submit(soon).ok());
  s.Start();
  ASSERT_TRUE(li.WaitFinished(3));
  EXPECT_EQ(li.started, (std::vector<std::string>{"soon", "late", "none"}));
}

TEST(Scheduler, SlotsBoundConcurrencyPerDevice) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 3}}}, &li);
  s.Start();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(s.Submit(Job("j" + std::to_string(i), "# sim: sleep=0.05")).ok());
  ASSERT_TRUE(li.WaitFinished(12));
  EXPECT_LE(ev.MaxConcurrent(), 3);
  EXPECT_GE(ev.MaxConcurrent(), 2);  // several slots really overlap
  auto st = s.Stats();
  EXPECT_EQ(st.outcomes["correct"], 12);
  EXPECT_GT(st.devices[0].busy_s, 0.0);
  EXPECT_GT(st.phases["load"].count, 0);
}

TEST(Scheduler, PinnedJobsRunOnTheirDevice) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cuda:0", 1}, {"cuda:1", 1}}}, &li);
  s.Start();
  for (int i = 0; i < 4; ++i) {
    SchedJob j = Job("p" + std::to_string(i));
    j.device = "cuda:1";
    ASSERT_TRUE(s.Submit(j).ok());
  }
  SchedJob bad = Job("bad");
  bad.device = "cuda:7";
  EXPECT_FALSE(s.Submit(bad).ok());
  ASSERT_TRUE(li.WaitFinished(4));
  for (auto& [id, dev] : li.devices) EXPECT_EQ(dev, "cuda:1") << id;
  EXPECT_EQ(li.results["p0"][0].metadata["device"], "cuda:1");
}

TEST(Scheduler, SystemErrorsAreRetriedCandidateFailuresAreNot) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  SchedulerOptions o{{{"cpu", 2}}};
  o.max_retries = 2;
  o.retry_backoff_s = 0.01;
  Scheduler s(&ev, o, &li);
  s.Start();
  ASSERT_TRUE(s.Submit(Job("flaky", "# sim: system_error=2")).ok());
  ASSERT_TRUE(s.Submit(Job("broken", "# sim: system_error=5")).ok());
  ASSERT_TRUE(s.Submit(Job("bad", "# sim: outcome=compile_error")).ok());
  ASSERT_TRUE(li.WaitFinished(3));
  EXPECT_EQ(ev.Attempts("flaky"), 3);
  EXPECT_EQ(li.results["flaky"][0].outcome, Outcome::kCorrect);
  ASSERT_EQ(li.retry_delays["flaky"].size(), 2u);
  EXPECT_DOUBLE_EQ(li.retry_delays["flaky"][1], 2 * li.retry_delays["flaky"][0]);  // exponential backoff
  EXPECT_EQ(ev.Attempts("broken"), 3);  // 1 + max_retries, then the failure is reported
  EXPECT_EQ(li.results["broken"][0].error_code, "SYSTEM_ERROR");
  EXPECT_EQ(ev.Attempts("bad"), 1);
  EXPECT_EQ(li.results["bad"][0].outcome, Outcome::kCompileError);
  EXPECT_EQ(li.finished.size(), 3u);  // one final result per job
}

TEST(Scheduler, CancelQueuedAndRunning) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 1}}}, &li);
  s.Start();
  ASSERT_TRUE(s.Submit(Job("long", "# sim: sleep=30")).ok());
  ASSERT_TRUE(s.Submit(Job("waiting")).ok());
  ASSERT_TRUE(li.WaitStarted(1));
  EXPECT_TRUE(s.Cancel("waiting"));
  EXPECT_TRUE(s.Cancel("long"));
  EXPECT_FALSE(s.Cancel("unknown"));
  ASSERT_TRUE(li.WaitFinished(2));
  EXPECT_EQ(li.results["waiting"][0].error_message, "cancelled");
  EXPECT_EQ(ev.Attempts("waiting"), 0);
  EXPECT_EQ(li.results["long"][0].error_message, "cancelled");
  EXPECT_EQ(s.Stats().outcomes["cancelled"], 2);
}

TEST(Scheduler, ExpiredDeadlineFinishesAsTimeoutWithoutRunning) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 1}}}, &li);
  SchedJob j = Job("late");
  j.deadline = 1.0;  // 1970
  ASSERT_TRUE(s.Submit(j).ok());
  s.Start();
  ASSERT_TRUE(li.WaitFinished(1));
  EXPECT_EQ(li.results["late"][0].outcome, Outcome::kTimeout);
  EXPECT_EQ(ev.Attempts("late"), 0);
}

TEST(Scheduler, DrainWaitsForRunningAndLeavesQueued) {
  SimulatedEvaluator ev({});
  RecordingListener li;
  Scheduler s(&ev, {{{"cpu", 1}}}, &li);
  s.Start();
  ASSERT_TRUE(s.Submit(Job("a", "# sim: sleep=0.2")).ok());
  ASSERT_TRUE(s.Submit(Job("b")).ok());
  ASSERT_TRUE(li.WaitStarted(1));
  EXPECT_EQ(s.Drain(10), 0);
  EXPECT_EQ(li.finished, (std::vector<std::string>{"a"}));
  EXPECT_EQ(s.Stats().queued, 1);
}

// Records the look-ahead's PrepareReference calls; the evaluation of job `gated_job` waits (up to 5 s) until the
// reference of task `awaited_task` has been prepared, and notes whether it was.
class LookaheadEvaluator : public Evaluator {
 public:
  bool PrepareReference(const EvalRequest& req, const std::atomic<bool>*) override {
    std::lock_guard<std::mutex> l(mu);
    prepared[req.reference_code]++;
    prepared_on[req.reference_code] = req.device;
    cv.notify_all();
    return true;
  }
  EvalResult Evaluate(const EvalRequest& req, const ProgressFn&, const std::atomic<bool>*) override {
    std::unique_lock<std::mutex> l(mu);
    started_with_reference[req.task_id] = prepared.count(req.reference_code) > 0;
    if (req.task_id == gated_job)
      saw_awaited = cv.wait_for(l, std::chrono::seconds(5), [&] { return prepared.count(awaited_task) > 0; });
    EvalResult r;
    r.task_id = req.task_id;
    r.outcome = Outcome::kCorrect;
    return r;
  }
  std::vector<std::string> Devices() const override { return {"cpu"}; }
  std::mutex mu;
  std::condition_variable cv;
  std::string gated_job, awaited_task;
  bool saw_awaited = false;
  std::map<std::string, int> prepared;
  std::map<std::string, std::string> prepared_on;
  std::map<std::string, bool> started_with_reference;
};

SchedJob TaskJob(const std::string& id, const std::string& task) {
  SchedJob j = Job(id);
  j.request.reference_code = task;  // the reference configuration (ReferenceKey) differs by task
  return j;
}

SchedulerOptions OneCpuSlot(int reference_lookahead) {
  SchedulerOptions o;
  o.devices = {{"cpu", 1}};
  o.reference_lookahead = reference_lookahead;
  return o;
}

// Submits jobs (id, task) in order.
void SubmitTasks(Scheduler* s, std::initializer_list<std::pair<const char*, const char*>> jobs) {
  for (auto [id, task] : jobs) ASSERT_TRUE(s->Submit(TaskJob(id, task)).ok());
}

TEST(Scheduler, LookaheadPreparesTheNextTasksReferenceWhileEarlierJobsRun) {
  LookaheadEvaluator ev;
  ev.gated_job = "a2";
  ev.awaited_task = "B";
  RecordingListener li;
  Scheduler s(&ev, OneCpuSlot(1), &li);
  SubmitTasks(&s, {{"a1", "A"}, {"a2", "A"}, {"b1", "B"}, {"b2", "B"}});
  s.Start();
  ASSERT_TRUE(li.WaitFinished(4));
  s.Stop();
  // With one slot, b1 is among the next jobs only once a2 runs; a2 (task A) waits until B's reference is prepared.
  EXPECT_TRUE(ev.saw_awaited);
  EXPECT_TRUE(ev.started_with_reference["b1"]);
  EXPECT_EQ(ev.prepared["B"], 1);  // once per configuration, not per job
  EXPECT_LE(ev.prepared["A"], 1);
  EXPECT_EQ(ev.prepared_on["B"], "cpu");  // as the job will run there
  EXPECT_GE(s.Stats().devices[0].references_prepared, 1);
}

// Records the reference sets the scheduler wants kept; job `gated_job` runs until released (or 5 s).
class WantEvaluator : public Evaluator {
 public:
  void WantReferences(const std::string& owner, const std::set<std::string>& keys) override {
    std::lock_guard<std::mutex> l(mu);
    wants.emplace_back(owner, keys);
    cv.notify_all();
  }
  EvalResult Evaluate(const EvalRequest& req, const ProgressFn&, const std::atomic<bool>*) override {
    std::unique_lock<std::mutex> l(mu);
    if (req.task_id == gated_job) cv.wait_for(l, std::chrono::seconds(5), [&] { return released; });
    EvalResult r;
    r.task_id = req.task_id;
    r.outcome = Outcome::kCorrect;
    return r;
  }
  std::vector<std::string> Devices() const override { return {"cpu"}; }
  bool Saw(const std::set<std::string>& keys) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(5), [&] {
      for (const auto& [owner, k] : wants)
        if (k == keys) return true;
      return false;
    });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::string gated_job;
  bool released = false;
  std::vector<std::pair<std::string, std::set<std::string>>> wants;
};

std::string KeyOnCpu(const std::string& task) {
  EvalRequest r = TaskJob("x", task).request;
  r.device = "cpu";
  return ReferenceKey(r);
}

TEST(Scheduler, WantsTheReferencesOfRunningAndNextJobsKept) {
  WantEvaluator ev;
  ev.gated_job = "a1";
  RecordingListener li;
  Scheduler s(&ev, OneCpuSlot(0), &li);
  SubmitTasks(&s, {{"a1", "A"}, {"b1", "B"}, {"c1", "C"}});
  EXPECT_TRUE(ev.Saw({KeyOnCpu("A")}));  // queued: the one slot's window
  s.Start();
  EXPECT_TRUE(ev.Saw({KeyOnCpu("A"), KeyOnCpu("B")}));  // a1 runs, b1 is next
  ev.Release();
  ASSERT_TRUE(li.WaitFinished(3));
  EXPECT_TRUE(ev.Saw({KeyOnCpu("B"), KeyOnCpu("C")}));
  s.Stop();
  std::lock_guard<std::mutex> l(ev.mu);
  ASSERT_FALSE(ev.wants.empty());
  EXPECT_EQ(ev.wants.back(), (std::pair<std::string, std::set<std::string>>("cpu", {})));  // nothing left to keep
  for (size_t i = 1; i < ev.wants.size(); ++i) EXPECT_NE(ev.wants[i].second, ev.wants[i - 1].second);  // changes only
}

TEST(Scheduler, NoLookaheadWhenTurnedOff) {
  LookaheadEvaluator ev;
  RecordingListener li;
  Scheduler s(&ev, OneCpuSlot(0), &li);
  SubmitTasks(&s, {{"a1", "A"}, {"b1", "B"}, {"c1", "C"}});
  s.Start();
  ASSERT_TRUE(li.WaitFinished(3));
  s.Stop();
  EXPECT_TRUE(ev.prepared.empty());
}

}  // namespace
}  // namespace kgym
