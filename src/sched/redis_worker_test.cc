#include "sched/redis_worker.h"

#include <gtest/gtest.h>

#include <thread>

#include "eval/simulated_evaluator.h"
#include "sched/job_codec.h"
#include "store/redis_queue.h"
#include "store/redis_test_server.h"

namespace kgym {
namespace {

std::string Payload(const std::string& id, const std::string& code) {
  SchedJob j;
  j.id = id;
  j.request.task_id = id;
  j.request.kernel_code = code;
  return SchedJobToJson(j).dump();
}

TEST(RedisWorker, JobOfADeadWorkerCompletesOnALiveOneExactlyOnce) {
  RedisTestServer server;
  if (!server.Available()) GTEST_SKIP() << "redis-server not available";
  std::unique_ptr<RedisJobQueue> api;
  ASSERT_TRUE(RedisJobQueue::Connect(server.Url(), "kgym", &api).ok());
  bool enq;
  ASSERT_TRUE(api->Enqueue("orphan", 1, 1, Payload("orphan", "# sim: sleep=0.01"), &enq).ok());
  // A worker claims the job and dies without a heartbeat.
  std::optional<ClaimedJob> taken;
  ASSERT_TRUE(api->Claim("dead-worker", 300, &taken).ok());
  ASSERT_TRUE(taken.has_value());
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(
        api->Enqueue("j" + std::to_string(i), 1, 1, Payload("j" + std::to_string(i), "# sim: sleep=0.01"), &enq).ok());
  SimulatedEvaluator ev({});
  RedisWorkerOptions o;
  o.redis_url = server.Url();
  o.worker_id = "live-worker";
  o.devices = {{"cpu", 2}};
  o.lease_ms = 300;
  o.poll_ms = 10;
  RedisWorker w(&ev, o);
  std::atomic<bool> stop{false};
  std::thread t([&] { ASSERT_TRUE(w.Run(&stop).ok()); });
  std::map<std::string, int> seen;
  for (int i = 0; i < 200 && seen.size() < 6; ++i) {
    std::optional<FinishedJob> f;
    ASSERT_TRUE(api->NextFinished(0.1, &f).ok());
    if (!f) continue;
    seen[f->id]++;
    auto r = nlohmann::json::parse(f->result_json);
    EXPECT_EQ(r["outcome"], "correct");
    ASSERT_TRUE(api->Acknowledge(*f).ok());
  }
  stop = true;
  t.join();
  EXPECT_EQ(seen.size(), 6u);
  for (auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(ev.Attempts("orphan"), 1);
  // The dead worker's late completion is refused.
  bool accepted = true;
  ASSERT_TRUE(api->Complete("orphan", "dead-worker", 1, "{}", &accepted).ok());
  EXPECT_FALSE(accepted);
}

TEST(RedisWorker, CancelReachesARunningEvaluationThroughTheHeartbeat) {
  RedisTestServer server;
  if (!server.Available()) GTEST_SKIP() << "redis-server not available";
  std::unique_ptr<RedisJobQueue> api;
  ASSERT_TRUE(RedisJobQueue::Connect(server.Url(), "kgym", &api).ok());
  bool enq, was_queued, was_running;
  ASSERT_TRUE(api->Enqueue("long", 1, 1, Payload("long", "# sim: sleep=60"), &enq).ok());
  SimulatedEvaluator ev({});
  RedisWorkerOptions o;
  o.redis_url = server.Url();
  o.devices = {{"cpu", 1}};
  o.lease_ms = 300;
  o.poll_ms = 10;
  RedisWorker w(&ev, o);
  std::atomic<bool> stop{false};
  std::thread t([&] { ASSERT_TRUE(w.Run(&stop).ok()); });
  for (int i = 0; i < 200 && ev.Attempts("long") == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(api->Cancel("long", &was_queued, &was_running).ok());
  EXPECT_TRUE(was_running);
  std::optional<FinishedJob> f;
  for (int i = 0; i < 50 && !f; ++i) ASSERT_TRUE(api->NextFinished(0.1, &f).ok());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(nlohmann::json::parse(f->result_json)["error_message"], "cancelled");
  stop = true;
  t.join();
}

}  // namespace
}  // namespace kgym
