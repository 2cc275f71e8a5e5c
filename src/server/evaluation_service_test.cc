#include "server/evaluation_service.h"

#include <gtest/gtest.h>

#include <thread>

#include "eval/simulated_evaluator.h"

namespace kgym {
namespace {

const char* kRef = "import torch\nclass Model(torch.nn.Module):\n  def forward(self, x): return x.relu()\n";

ParsedRequest Req(const std::string& id, const std::string& directives = "") {
  nlohmann::json b = {{"task_id", id},
                      {"reference_code", kRef},
                      {"kernel_code", "import torch\nclass ModelNew(torch.nn.Module): pass\n" + directives}};
  ParsedRequest p;
  EXPECT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  return p;
}

struct Fixture {
  explicit Fixture(std::string store_path = ":memory:") {
    EXPECT_TRUE(JobStore::Open(store_path, {}, &store).ok());
    dispatcher = NewLocalDispatcher(&ev, {{{"cpu", 2}}});
    service = std::make_unique<EvaluationService>(store.get(), dispatcher.get(), ServiceOptions{});
    int recovered = 0;
    EXPECT_TRUE(service->Start(&recovered).ok());
  }
  ~Fixture() { service->Shutdown(5); }
  SimulatedEvaluator ev{{}};
  std::unique_ptr<JobStore> store;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<EvaluationService> service;
};

TEST(EvaluationService, RepeatedIdReturnsTheStoredResultUnlessForceRefresh) {
  Fixture f;
  JobRecord rec;
  bool created;
  ASSERT_TRUE(f.service->Submit(Req("a"), &rec, &created).ok());
  EXPECT_TRUE(created);
  ASSERT_TRUE(f.service->Wait("a", 10, &rec).ok());
  EXPECT_EQ(rec.state, JobState::kDone);
  ASSERT_TRUE(f.service->Submit(Req("a"), &rec, &created).ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(f.ev.Attempts("a"), 1);
  ParsedRequest again = Req("a");
  again.force_refresh = true;
  ASSERT_TRUE(f.service->Submit(again, &rec, &created).ok());
  EXPECT_TRUE(created);
  EXPECT_EQ(rec.generation, 2);
  ASSERT_TRUE(f.service->Wait("a", 10, &rec).ok());
  EXPECT_EQ(f.ev.Attempts("a"), 2);  // really re-ran
  EXPECT_EQ(rec.completions, 2);
}

TEST(EvaluationService, PrecheckFailureFinishesWithoutEvaluating) {
  Fixture f;
  nlohmann::json b = {{"task_id", "bad"}, {"reference_code", kRef}, {"kernel_code", "print('no class here')"}};
  ParsedRequest p;
  ASSERT_TRUE(ParseEvaluationRequest(b, true, &p).ok());
  JobRecord rec;
  bool created;
  ASSERT_TRUE(f.service->Submit(p, &rec, &created).ok());
  EXPECT_EQ(rec.state, JobState::kDone);
  EXPECT_EQ(f.ev.Attempts("bad"), 0);
  EXPECT_NE(rec.result_json.find("VALIDATION_ERROR"), std::string::npos);
}

TEST(EvaluationService, CancelStopsARunningEvaluation) {
  Fixture f;
  JobRecord rec;
  bool created, cancelled;
  ASSERT_TRUE(f.service->Submit(Req("slow", "# sim: sleep=30"), &rec, &created).ok());
  for (int i = 0; i < 200 && f.ev.Attempts("slow") == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(f.service->Cancel("slow", &cancelled).ok());
  EXPECT_TRUE(cancelled);
  ASSERT_TRUE(f.service->Wait("slow", 10, &rec).ok());
  EXPECT_NE(rec.result_json.find("cancelled"), std::string::npos);
  EXPECT_EQ(f.service->Cancel("nope", &cancelled).code(), Status::Code::kNotFound);
}

TEST(EvaluationService, EventsReportProgressAndEnd) {
  Fixture f;
  JobRecord rec;
  bool created, done = false;
  ASSERT_TRUE(f.service->Submit(Req("e", "# sim: sleep=0.05"), &rec, &created).ok());
  std::vector<std::string> types;
  int64_t last = 0;
  for (int i = 0; i < 100 && !done; ++i) {
    std::vector<JobEvent> ev;
    f.service->Events("e", last, 1.0, &ev, &done);
    for (auto& e : ev) {
      types.push_back(e.type);
      last = e.seq;
    }
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(types.front(), "accepted");
  EXPECT_EQ(types.back(), "done");
  EXPECT_NE(std::find(types.begin(), types.end(), "started"), types.end());
}

TEST(EvaluationService, RestartRedispatchesJobsLeftQueuedOrRunning) {
  std::string path = ::testing::TempDir() + "/kgym-service-restart.sqlite";
  std::remove(path.c_str());
  {
    // A crash leaves rows as running/queued: write them directly as a killed server would have.
    std::unique_ptr<JobStore> store;
    ASSERT_TRUE(JobStore::Open(path, {}, &store).ok());
    for (const char* id : {"r1", "r2"}) {
      ParsedRequest p = Req(id);
      JobRecord rec;
      rec.id = id;
      rec.request_json = "{\"id\":\"" + std::string(id) + "\",\"request\":{\"task_id\":\"" + id + "\"}}";
      bool inserted;
      ASSERT_TRUE(store->Insert(rec, &inserted, nullptr).ok());
    }
    ASSERT_TRUE(store->MarkRunning("r1", 1, "cpu", 1).ok());
  }
  Fixture f(path);
  JobRecord rec;
  ASSERT_TRUE(f.service->Wait("r1", 10, &rec).ok());
  ASSERT_TRUE(f.service->Wait("r2", 10, &rec).ok());
  EXPECT_EQ(rec.completions, 1);
  EXPECT_EQ(f.ev.Attempts("r1"), 1);
}

TEST(EvaluationService, DrainingRefusesNewJobs) {
  Fixture f;
  f.service->BeginDrain();
  JobRecord rec;
  bool created;
  EXPECT_EQ(f.service->Submit(Req("late"), &rec, &created).code(), Status::Code::kUnavailable);
}

}  // namespace
}  // namespace kgym
