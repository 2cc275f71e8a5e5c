// MemoryAdmission: the budget holds under concurrent threads, shared reference data is counted once, an
// evaluation larger than the budget runs alone, unknown footprints run one at a time, a large waiter is overtaken
// at most max_bypass times, cancel leaves the queue, and nothing deadlocks. Plus AdmittedEvaluator's learning of
// footprints from results, and the /proc readers.
#include "sched/admission.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <random>
#include <thread>

#include "sandbox/process_stats.h"
#include "sched/admitted_evaluator.h"
#include "sched/host_memory.h"

namespace kgym {
namespace {

using Ticket = std::unique_ptr<MemoryAdmission::Ticket>;
using namespace std::chrono_literals;

Footprint Known(uint64_t priv, const std::string& key = "", uint64_t shared = 0) {
  Footprint f;
  f.known = true;
  f.private_bytes = priv;
  f.shared_key = key;
  f.shared_bytes = shared;
  return f;
}

AdmissionOptions Budget(uint64_t b, int max_bypass = 4) {
  AdmissionOptions o;
  o.budget_bytes = b;
  o.max_bypass = max_bypass;
  o.log_oversized = false;
  return o;
}

std::future<Ticket> AdmitAsync(MemoryAdmission* a, Footprint f, const std::atomic<bool>* cancel = nullptr) {
  return std::async(std::launch::async, [=] { return a->Admit(f, "test", cancel); });
}

// Waits (bounded) until `n` admissions are waiting; the admission threads start asynchronously.
void WaitForWaiting(MemoryAdmission* a, int64_t n) {
  for (int i = 0; i < 500 && a->Stats().waiting != n; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(a->Stats().waiting, n);
}

bool Blocked(std::future<Ticket>& f) { return f.wait_for(200ms) == std::future_status::timeout; }
bool Admitted(std::future<Ticket>& f) { return f.wait_for(10s) == std::future_status::ready; }

TEST(MemoryAdmission, OffAdmitsEverythingAtOnce) {
  MemoryAdmission a(Budget(0));
  std::vector<Ticket> t;
  for (int i = 0; i < 10; ++i) t.push_back(a.Admit(Known(uint64_t{1} << 40), "x"));
  EXPECT_EQ(a.Stats().in_flight, 10);
  EXPECT_EQ(a.Stats().waited_total, 0);
}

TEST(MemoryAdmission, WaitsUntilReleaseThenAdmits) {
  MemoryAdmission a(Budget(100));
  Ticket t1 = a.Admit(Known(30), "a"), t2 = a.Admit(Known(30), "b"), t3 = a.Admit(Known(30), "c");
  EXPECT_EQ(a.Stats().reserved_bytes, 90u);
  auto f4 = AdmitAsync(&a, Known(30));
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(f4));
  t2.reset();
  ASSERT_TRUE(Admitted(f4));
  Ticket t4 = f4.get();
  EXPECT_GT(t4->waited_s(), 0);
  AdmissionStats s = a.Stats();
  EXPECT_EQ(s.in_flight, 3);
  EXPECT_EQ(s.waited_total, 1);
  EXPECT_EQ(s.admitted_total, 4);
  EXPECT_GT(s.wait_seconds_total, 0);
}

TEST(MemoryAdmission, SharedReferenceCountedOnce) {
  MemoryAdmission a(Budget(100));
  Ticket t1 = a.Admit(Known(10, "taskA", 60), "a1"), t2 = a.Admit(Known(10, "taskA", 60), "a2");
  EXPECT_EQ(a.Stats().reserved_bytes, 80u);  // 60 shared once + 2 x 10
  auto fb = AdmitAsync(&a, Known(10, "taskB", 60));
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(fb));
  Ticket t3 = a.Admit(Known(10, "taskA", 60), "a3");  // another of task A still fits (90) and overtakes B
  EXPECT_EQ(a.Stats().reserved_bytes, 90u);
  t1.reset(), t2.reset();
  EXPECT_TRUE(Blocked(fb));  // A's data is still held by a3
  t3.reset();
  ASSERT_TRUE(Admitted(fb));
}

TEST(MemoryAdmission, ResidentDataCountsAgainstTheBudget) {
  std::atomic<uint64_t> cached{70};
  AdmissionOptions o = Budget(100);
  o.resident = [&] { return std::vector<std::pair<std::string, uint64_t>>{{"taskA", cached.load()}}; };
  MemoryAdmission a(o);
  Ticket t1 = a.Admit(Known(20, "taskB", 0), "b");  // first in: admitted whatever is resident
  EXPECT_EQ(a.Stats().reserved_bytes, 90u);
  EXPECT_EQ(a.Stats().resident_bytes, 70u);
  Ticket t2 = a.Admit(Known(10, "taskA", 70), "a");  // task A's data is the resident data: only 10 more
  EXPECT_EQ(a.Stats().reserved_bytes, 100u);
  auto f = AdmitAsync(&a, Known(20, "taskC", 0));
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(f));
  cached = 0;  // the cache dropped it: the periodic re-check admits without any release
  t2.reset();
  ASSERT_TRUE(Admitted(f));
}

TEST(MemoryAdmission, OversizedRunsAloneAndIsCounted) {
  MemoryAdmission a(Budget(100));
  Ticket small = a.Admit(Known(10), "small");
  auto big = AdmitAsync(&a, Known(150));
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(big));
  small.reset();
  ASSERT_TRUE(Admitted(big));
  Ticket b = big.get();
  EXPECT_TRUE(b->oversized());
  auto next = AdmitAsync(&a, Known(1));
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(next));  // nothing joins it
  b.reset();
  ASSERT_TRUE(Admitted(next));
  EXPECT_EQ(a.Stats().oversized_total, 1);
}

TEST(MemoryAdmission, OversizedWithNothingInFlightRunsAtOnce) {
  MemoryAdmission a(Budget(100));
  Ticket t = a.Admit(Known(1000), "huge");
  EXPECT_TRUE(t->oversized());
  EXPECT_EQ(t->waited_s(), 0);
}

TEST(MemoryAdmission, UnknownFootprintsOneAtATime) {
  AdmissionOptions o = Budget(100);
  o.unknown_bytes = 50;
  MemoryAdmission a(o);
  Ticket u1 = a.Admit(Footprint{}, "u1");
  Ticket k = a.Admit(Known(30), "known");  // a known one fits beside it: 50 + 30
  EXPECT_EQ(a.Stats().unknown_in_flight, 1);
  auto u2 = AdmitAsync(&a, Footprint{});
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(u2));
  k.reset();
  EXPECT_TRUE(Blocked(u2));  // memory would fit, but another unknown one is in flight
  u1.reset();
  ASSERT_TRUE(Admitted(u2));
}

// kgym serve's setting: three first evaluations of configurations at once, each reserving a quarter of the budget
// until a larger footprint has been learned, which is then what the next unknown one reserves.
TEST(MemoryAdmission, ServeAdmitsThreeUnknownsAndReservesTheLargestLearned) {
  AdmissionOptions o = Budget(1000);
  o.max_unknown_in_flight = kServeUnknownInFlight;
  MemoryAdmission a(o);
  Ticket u0 = a.AdmitConfig("z", "u0");  // nothing known yet: one unknown alone, half the budget reserved
  auto u1f = std::async(std::launch::async, [&] { return a.AdmitConfig("a", "u1"); });
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(u1f));
  a.Learn("z", Known(100));  // a small configuration learned: three unknown ones at a quarter each
  u0.reset();
  ASSERT_TRUE(Admitted(u1f));
  Ticket u1 = u1f.get();
  Ticket u2 = a.AdmitConfig("b", "u2");
  Ticket u3 = a.AdmitConfig("c", "u3");
  EXPECT_EQ(a.Stats().unknown_in_flight, 3);
  EXPECT_EQ(a.Stats().reserved_bytes, 750u);  // 3 x 1000 / 4
  auto u4 = std::async(std::launch::async, [&] { return a.AdmitConfig("d", "u4"); });
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(u4));  // a fourth unknown one waits
  a.Learn("a", Known(500));  // a 500-byte configuration seen: unknown ones now reserve 500 each
  u1.reset();
  EXPECT_EQ(a.Stats().reserved_bytes, 1000u);  // u2 and u3
  EXPECT_TRUE(Blocked(u4));                    // 500 more would pass the budget
  u2.reset();
  ASSERT_TRUE(Admitted(u4));
  EXPECT_EQ(a.Stats().reserved_bytes, 1000u);  // u3 and u4
  Ticket t4 = u4.get();
  EXPECT_FALSE(t4->footprint_known());
}

TEST(MemoryAdmission, QueuedBehindTheFirstOfItsConfigurationUsesItsMeasurement) {
  AdmissionOptions o = Budget(1000);
  o.unknown_bytes = 100;
  MemoryAdmission a(o);
  Ticket first = a.AdmitConfig("cfg", "first");
  EXPECT_FALSE(first->footprint_known());
  auto second = std::async(std::launch::async, [&] { return a.AdmitConfig("cfg", "second"); });
  WaitForWaiting(&a, 1);
  EXPECT_TRUE(Blocked(second));  // one unknown at a time
  a.Learn("cfg", Known(300, "ref", 400));
  first.reset();
  ASSERT_TRUE(Admitted(second));
  Ticket t2 = second.get();
  EXPECT_TRUE(t2->footprint_known());
  EXPECT_EQ(t2->reserved_bytes(), 700u);
  a.Learn("cfg", Known(200, "ref", 500));  // the largest of each part is kept
  EXPECT_EQ(a.Known("cfg").shared_bytes, 500u);
  EXPECT_EQ(a.Known("cfg").private_bytes, 300u);
  EXPECT_FALSE(a.Known("other").known);
}

TEST(MemoryAdmission, EstimateStandsInUntilTheFirstMeasurement) {
  AdmissionOptions o = Budget(1000);
  o.unknown_bytes = 600;
  MemoryAdmission a(o);
  Ticket first = a.AdmitConfig("cfg", "first");
  auto second = std::async(std::launch::async, [&] { return a.AdmitConfig("cfg", "second"); });
  auto other = std::async(std::launch::async, [&] { return a.AdmitConfig("other", "other"); });
  WaitForWaiting(&a, 2);
  EXPECT_TRUE(Blocked(second));
  a.Estimate("cfg", Known(100, "ref", 200));  // the first is no longer unknown: both waiters fit
  ASSERT_TRUE(Admitted(second));
  ASSERT_TRUE(Admitted(other));
  EXPECT_EQ(second.get()->reserved_bytes(), 300u);
  EXPECT_EQ(a.Stats().unknown_in_flight, 1);  // "other"
  a.Learn("cfg", Known(50, "ref", 150));      // the measurement replaces the estimate (not the larger of the two)
  EXPECT_EQ(a.Known("cfg").private_bytes, 50u);
  a.Estimate("cfg", Known(500, "ref", 500));  // measured already: ignored
  EXPECT_EQ(a.Known("cfg").private_bytes, 50u);
  a.Learn("cfg", Known(80, "ref", 100));  // from then on the largest of each part
  EXPECT_EQ(a.Known("cfg").private_bytes, 80u);
  EXPECT_EQ(a.Known("cfg").shared_bytes, 150u);
}

TEST(MemoryAdmission, LargeWaiterOvertakenAtMostMaxBypassTimes) {
  MemoryAdmission a(Budget(100, /*max_bypass=*/2));
  Ticket s0 = a.Admit(Known(40), "s0");
  auto big = AdmitAsync(&a, Known(80));
  WaitForWaiting(&a, 1);
  Ticket s1 = a.Admit(Known(40), "s1");  // overtakes (1)
  s0.reset();
  Ticket s2 = a.Admit(Known(40), "s2");  // overtakes (2)
  s1.reset();
  auto s3 = AdmitAsync(&a, Known(40));  // would fit (80), but the big one has been overtaken enough
  WaitForWaiting(&a, 2);
  EXPECT_TRUE(Blocked(s3));
  EXPECT_TRUE(Blocked(big));
  s2.reset();
  ASSERT_TRUE(Admitted(big));
  Ticket b = big.get();
  EXPECT_TRUE(Blocked(s3));  // 80 + 40 > 100
  b.reset();
  ASSERT_TRUE(Admitted(s3));
}

TEST(MemoryAdmission, CancelWhileWaitingLeavesTheQueue) {
  MemoryAdmission a(Budget(100, /*max_bypass=*/0));
  Ticket t = a.Admit(Known(60), "holder");
  std::atomic<bool> cancel{false};
  auto big = AdmitAsync(&a, Known(80), &cancel);
  WaitForWaiting(&a, 1);
  auto small = AdmitAsync(&a, Known(30));  // blocked behind the head (max_bypass 0) although it fits
  WaitForWaiting(&a, 2);
  EXPECT_TRUE(Blocked(small));
  cancel = true;
  ASSERT_TRUE(Admitted(big));
  EXPECT_EQ(big.get(), nullptr);
  ASSERT_TRUE(Admitted(small));  // the head left: the one behind it goes
  EXPECT_NE(small.get(), nullptr);
  EXPECT_EQ(a.Stats().cancelled_total, 1);
}

// Many threads, random footprints (known, shared, unknown, oversized): every admission completes, and whenever
// more than one evaluation is in flight the reserved bytes are within the budget.
TEST(MemoryAdmission, ConcurrentStressRespectsBudgetAndNeverDeadlocks) {
  const uint64_t budget = 1000;
  AdmissionOptions o = Budget(budget);
  o.unknown_bytes = 400;
  MemoryAdmission a(o);
  std::atomic<int> violations{0}, done{0}, max_in_flight{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      for (int i = 0; i < 40; ++i) {
        Footprint f;
        int kind = rng() % 10;
        if (kind == 0) {
          f = Footprint{};  // unknown
        } else if (kind == 1) {
          f = Known(1200);  // oversized
        } else {
          f = Known(50 + rng() % 300, "task" + std::to_string(rng() % 3), 100 + rng() % 200);
        }
        Ticket tk = a.Admit(f, "stress");
        for (int k = 0; k < 3; ++k) {
          AdmissionStats s = a.Stats();
          if (s.in_flight > 1 && s.reserved_bytes > budget) ++violations;
          if (s.in_flight > max_in_flight) max_in_flight = static_cast<int>(s.in_flight);
          std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 800));
        }
        tk.reset();
        ++done;
      }
    });
  }
  auto joined = std::async(std::launch::async, [&] {
    for (auto& th : threads) th.join();
  });
  ASSERT_EQ(joined.wait_for(120s), std::future_status::ready) << "deadlock: " << done << " of 320 done";
  EXPECT_EQ(done, 320);
  EXPECT_EQ(violations, 0);
  EXPECT_GE(max_in_flight, 2);  // it does run several at once
  AdmissionStats s = a.Stats();
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.admitted_total, 320);
}

// A stand-in for the real evaluator: reports a fixed footprint in its results and counts evaluations in flight.
class FakeEvaluator : public Evaluator {
 public:
  EvalResult Evaluate(const EvalRequest& req, const ProgressFn& progress, const std::atomic<bool>*) override {
    if (reports_reference_) {  // like the real one: its reference data is cached, then it moves on to "load"
      {
        std::lock_guard<std::mutex> l(mu_);
        held_key_ = ReferenceKey(req);
      }
      if (progress) progress("load");
    }
    int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    EvalResult r;
    r.task_id = req.task_id;
    r.outcome = Outcome::kCorrect;
    r.signals.reference_cache_key = "ref-" + req.size;
    r.signals.host_memory = {true, 600, 100, 200, 0};
    --running_;
    return r;
  }
  bool PrepareReference(const EvalRequest& req, const std::atomic<bool>*) override {
    std::lock_guard<std::mutex> l(mu_);
    held_key_ = ReferenceKey(req);
    prepared_++;
    return true;
  }
  std::vector<std::string> Devices() const override { return {"cpu"}; }
  std::vector<std::pair<std::string, uint64_t>> CachedReferences() override {
    std::lock_guard<std::mutex> l(mu_);
    if (held_key_.empty()) return {};
    return {{held_key_, 600}};
  }
  uint64_t CachedReferencePrivateBytes(const std::string& key) override {
    std::lock_guard<std::mutex> l(mu_);
    return key == held_key_ ? private_bound_ : 0;
  }
  std::atomic<int> running_{0}, max_running_{0};
  uint64_t private_bound_ = 0;  // what the evaluator says one evaluation holds beyond the reference (0 = no bound)
  int sleep_ms_ = 20;
  bool reports_reference_ = false;
  int prepared_ = 0;
  std::mutex mu_;
  std::string held_key_;
};

EvalRequest Request(const std::string& size = "small") {
  EvalRequest req;
  req.task_id = "level1/t_triton";
  req.reference_code = "class Model: pass";
  req.size = size;
  return req;
}

TEST(AdmittedEvaluator, LearnsTheFootprintFromTheFirstResult) {
  auto fake = std::make_unique<FakeEvaluator>();
  AdmittedEvaluator ev(std::move(fake), Budget(1000));
  EvalResult r1 = ev.Evaluate(Request());
  EXPECT_EQ(r1.metadata["memory_admission"]["footprint_known"], false);
  EXPECT_EQ(r1.metadata["memory_admission"]["measured_bytes"], 900);  // 600 shared + 100 outputs + 200 worker
  EvalResult r2 = ev.Evaluate(Request());
  EXPECT_EQ(r2.metadata["memory_admission"]["footprint_known"], true);
  EXPECT_EQ(r2.metadata["memory_admission"]["reserved_bytes"], 900);
  EXPECT_EQ(ev.Evaluate(Request("large")).metadata["memory_admission"]["footprint_known"], false);  // other size
  AdmissionStats s;
  ASSERT_TRUE(ev.Admission(&s));
  EXPECT_EQ(s.admitted_total, 3);
  EXPECT_EQ(s.budget_bytes, 1000u);
}

// Four threads evaluating one task: with room for one (600 shared + 300 private each, budget 1000) they run one at
// a time; with room for two (1300) at most two run together, and they do share the reference's 600 bytes.
TEST(AdmittedEvaluator, LimitsConcurrencyByLearnedFootprint) {
  for (auto [budget, most] : {std::pair<uint64_t, int>{1000, 1}, {1300, 2}}) {
    auto fake = std::make_unique<FakeEvaluator>();
    FakeEvaluator* raw = fake.get();
    AdmittedEvaluator ev(std::move(fake), Budget(budget));
    ev.Evaluate(Request());  // learns the footprint
    std::vector<std::thread> th;
    for (int i = 0; i < 4; ++i)
      th.emplace_back([&] {
        for (int k = 0; k < 3; ++k) ev.Evaluate(Request());
      });
    for (auto& t : th) t.join();
    EXPECT_LE(raw->max_running_.load(), most) << "budget " << budget;
    AdmissionStats s;
    ev.Admission(&s);
    EXPECT_EQ(s.admitted_total, 13);
    EXPECT_GT(s.waited_total, 0);
  }
}

TEST(AdmittedEvaluator, SecondOfAConfigurationWaitsForTheFirstsMeasurement) {
  auto fake = std::make_unique<FakeEvaluator>();
  fake->sleep_ms_ = 300;
  AdmittedEvaluator ev(std::move(fake), Budget(100000));
  auto a = std::async(std::launch::async, [&] { return ev.Evaluate(Request()); });
  AdmissionStats s;
  for (int i = 0; i < 200 && (ev.Admission(&s), s.in_flight) == 0; ++i) std::this_thread::sleep_for(5ms);
  EvalResult b = ev.Evaluate(Request());
  EXPECT_EQ(a.get().metadata["memory_admission"]["footprint_known"], false);
  EXPECT_EQ(b.metadata["memory_admission"]["footprint_known"], true);
  EXPECT_EQ(b.metadata["memory_admission"]["reserved_bytes"], 900);
  EXPECT_GT(b.metadata["memory_admission"]["waited_s"].get<double>(), 0);
}

// With the reference data cached as soon as the first evaluation reaches "load", the second of the configuration
// is admitted on the estimate (600 shared + 2 x 600) while the first still runs; the first's measurement (900)
// then replaces the estimate for the third.
TEST(AdmittedEvaluator, QueuedOnesStartOnceTheFirstsReferenceExists) {
  auto fake = std::make_unique<FakeEvaluator>();
  FakeEvaluator* raw = fake.get();
  fake->sleep_ms_ = 400;
  fake->reports_reference_ = true;
  AdmittedEvaluator ev(std::move(fake), Budget(100000));
  auto a = std::async(std::launch::async, [&] { return ev.Evaluate(Request()); });
  auto b = std::async(std::launch::async, [&] { return ev.Evaluate(Request()); });
  EvalResult ra = a.get(), rb = b.get();
  EXPECT_EQ(raw->max_running_.load(), 2);  // side by side: b did not wait for a's measurement
  const EvalResult& second = ra.metadata["memory_admission"]["footprint_known"] == true ? ra : rb;
  EXPECT_EQ(second.metadata["memory_admission"]["footprint_known"], true);
  EXPECT_EQ(second.metadata["memory_admission"]["reserved_bytes"], 1800);
  EvalResult c = ev.Evaluate(Request());
  EXPECT_EQ(c.metadata["memory_admission"]["reserved_bytes"], 900);
}

// A reference prepared ahead (the scheduler's look-ahead) is admitted as the configuration's unknown one and leaves
// an estimate from its data (600 shared + 2 x 600): the configuration's first evaluation is admitted on it.
TEST(AdmittedEvaluator, PreparedReferenceLeavesAnEstimate) {
  auto fake = std::make_unique<FakeEvaluator>();
  FakeEvaluator* raw = fake.get();
  AdmittedEvaluator ev(std::move(fake), Budget(100000));
  EXPECT_TRUE(ev.PrepareReference(Request()));
  EXPECT_EQ(raw->prepared_, 1);
  AdmissionStats s;
  ev.Admission(&s);
  EXPECT_EQ(s.in_flight, 0);  // the look-ahead's reservation is gone
  EXPECT_EQ(s.references_total, 1);
  EXPECT_EQ(s.admitted_total, 0);  // it is no evaluation
  EvalResult r = ev.Evaluate(Request());
  EXPECT_EQ(r.metadata["memory_admission"]["footprint_known"], true);
  EXPECT_EQ(r.metadata["memory_admission"]["reserved_bytes"], 1800);
  std::atomic<bool> cancel{true};
  raw->sleep_ms_ = 1000;
  auto blocker = std::async(std::launch::async, [&] { return ev.Evaluate(Request("large")); });  // unknown, runs
  for (int i = 0; i < 200 && (ev.Admission(&s), s.in_flight) == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(ev.PrepareReference(Request("huge"), &cancel));  // unknown while another unknown runs: gives up
  EXPECT_EQ(raw->prepared_, 1);
  blocker.get();
}

// Where the evaluator bounds what an evaluation holds beyond the reference data (its outputs in lent buffers, a worker
// the size of the reference's), the estimate uses that bound instead of twice the reference data.
TEST(AdmittedEvaluator, EstimateUsesTheEvaluatorsBoundWhereItHasOne) {
  auto fake = std::make_unique<FakeEvaluator>();
  fake->private_bound_ = 150;
  AdmittedEvaluator ev(std::move(fake), Budget(100000));
  EXPECT_TRUE(ev.PrepareReference(Request()));
  EXPECT_EQ(ev.EstimateFromReference(AdmittedEvaluator::FootprintKey(Request())).Total(), 750u);
  EvalResult r = ev.Evaluate(Request());
  EXPECT_EQ(r.metadata["memory_admission"]["reserved_bytes"], 750);
}

TEST(AdmittedEvaluator, CancelWhileWaitingRunsNothing) {
  auto fake = std::make_unique<FakeEvaluator>();
  fake->sleep_ms_ = 1500;
  AdmittedEvaluator ev(std::move(fake), Budget(1000));
  auto first = std::async(std::launch::async, [&] { return ev.Evaluate(Request()); });  // unknown: runs
  AdmissionStats s;
  for (int i = 0; i < 200 && (ev.Admission(&s), s.in_flight) == 0; ++i) std::this_thread::sleep_for(5ms);
  std::atomic<bool> cancel{true};
  std::vector<std::string> phases;
  EvalResult r = ev.Evaluate(
      Request(), [&](const std::string& p) { phases.push_back(p); }, &cancel);  // unknown too
  EXPECT_EQ(r.outcome, Outcome::kInvalid);
  EXPECT_EQ(r.error_message, "cancelled");
  EXPECT_EQ(phases, std::vector<std::string>{"memory"});
  EXPECT_EQ(first.get().outcome, Outcome::kCorrect);
}

TEST(AdmittedEvaluator, FootprintKeyAndMeasurement) {
  EvalRequest a = Request(), b = Request("large"), c = Request();
  c.device = "cuda";
  EXPECT_EQ(AdmittedEvaluator::FootprintKey(a), AdmittedEvaluator::FootprintKey(Request()));
  EXPECT_NE(AdmittedEvaluator::FootprintKey(a), AdmittedEvaluator::FootprintKey(b));
  EXPECT_NE(AdmittedEvaluator::FootprintKey(a), AdmittedEvaluator::FootprintKey(c));
  EvalResult none;
  EXPECT_FALSE(AdmittedEvaluator::Measured(none).known);  // e.g. a request rejected before its reference ran
  EvalResult r;
  r.signals.reference_cache_key = "k";
  r.signals.host_memory = {true, 1000, 10, 0, 0};
  Footprint f = AdmittedEvaluator::Measured(r);  // no worker measured: assume workers held the reference's size
  EXPECT_TRUE(f.known);
  EXPECT_EQ(f.shared_key, "k");
  EXPECT_EQ(f.shared_bytes, 1000u);
  EXPECT_EQ(f.private_bytes, 1010u);
  r.signals.host_memory.reference_worker_peak_bytes = 300;
  EXPECT_EQ(AdmittedEvaluator::Measured(r).private_bytes, 310u);
  r.metadata["host_memory"] = {{"reference_bytes", 5}};  // the metadata is for the result's readers: never read back
  EXPECT_EQ(AdmittedEvaluator::Measured(r).shared_bytes, 1000u);
}

TEST(HostMemory, ReadsThisMachine) {
  uint64_t avail = MemAvailableBytes();
  EXPECT_GT(avail, 0u);
  uint64_t budget = DefaultMemoryBudget(0.7);
  EXPECT_GT(budget, 0u);
  EXPECT_LE(budget, avail);
  EXPECT_GT(ProcessPeakPrivateBytes(::getpid()), 0u);
  EXPECT_EQ(ProcessPeakPrivateBytes(-1), 0u);
  EXPECT_EQ(MemoryBudgetFromFlag(0), 0u);
  EXPECT_EQ(MemoryBudgetFromFlag(2.5), 2'500'000'000u);
  EXPECT_GT(MemoryBudgetFromFlag(-1), 0u);
  EXPECT_EQ(FormatGB(2'500'000'000), "2.5 GB");
  EXPECT_EQ(FormatGB(50'000'000), "50 MB");
}

}  // namespace
}  // namespace kgym
