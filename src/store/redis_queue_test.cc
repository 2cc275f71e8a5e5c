#include "store/redis_queue.h"

#include <gtest/gtest.h>

#include <thread>

#include "store/redis_test_server.h"

namespace kgym {
namespace {

TEST(RedisUrl, Parses) {
  RedisAddress a;
  ASSERT_TRUE(ParseRedisUrl("redis://10.0.0.2:6380/3", &a).ok());
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.port, 6380);
  EXPECT_EQ(a.db, 3);
  ASSERT_TRUE(ParseRedisUrl("redis://localhost", &a).ok());
  EXPECT_EQ(a.port, 6379);
  EXPECT_FALSE(ParseRedisUrl("http://x", &a).ok());
}

class RedisQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server_.Available()) GTEST_SKIP() << "redis-server not available";
    ASSERT_TRUE(RedisJobQueue::Connect(server_.Url(), "t", &q_).ok());
  }
  RedisTestServer server_;
  std::unique_ptr<RedisJobQueue> q_;
};

TEST_F(RedisQueueTest, ClaimsByPriorityThenFifo) {
  bool enq;
  ASSERT_TRUE(q_->Enqueue("low", 1, 0, "L", &enq).ok());
  ASSERT_TRUE(q_->Enqueue("n1", 1, 1, "N1", &enq).ok());
  ASSERT_TRUE(q_->Enqueue("high", 1, 2, "H", &enq).ok());
  ASSERT_TRUE(q_->Enqueue("n2", 1, 1, "N2", &enq).ok());
  ASSERT_TRUE(q_->Enqueue("n1", 1, 1, "dup", &enq).ok());
  EXPECT_FALSE(enq);  // same generation is not enqueued twice
  std::vector<std::string> order;
  for (;;) {
    std::optional<ClaimedJob> j;
    ASSERT_TRUE(q_->Claim("w", 10000, &j).ok());
    if (!j) break;
    order.push_back(j->id);
    if (j->id == "n1") {
      EXPECT_EQ(j->payload, "N1");
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"high", "n1", "n2", "low"}));
}

TEST_F(RedisQueueTest, ExpiredLeaseRequeuesAndOnlyTheHolderCompletes) {
  bool enq, accepted;
  ASSERT_TRUE(q_->Enqueue("j", 1, 1, "P", &enq).ok());
  std::optional<ClaimedJob> a;
  ASSERT_TRUE(q_->Claim("dead-worker", 1, &a).ok());  // a 1 ms lease that is never renewed
  ASSERT_TRUE(a.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int requeued = 0;
  ASSERT_TRUE(q_->ReapExpiredLeases(&requeued).ok());
  EXPECT_EQ(requeued, 1);
  LeaseState ls;
  ASSERT_TRUE(q_->Heartbeat("j", "dead-worker", 1000, &ls).ok());
  EXPECT_EQ(ls, LeaseState::kLost);
  std::optional<ClaimedJob> b;
  ASSERT_TRUE(q_->Claim("live-worker", 10000, &b).ok());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->attempts, 2);
  ASSERT_TRUE(q_->Complete("j", "dead-worker", 1, "{\"late\":1}", &accepted).ok());
  EXPECT_FALSE(accepted);
  ASSERT_TRUE(q_->Complete("j", "live-worker", 1, "{\"ok\":1}", &accepted).ok());
  EXPECT_TRUE(accepted);
  ASSERT_TRUE(q_->Complete("j", "live-worker", 1, "{\"again\":1}", &accepted).ok());
  EXPECT_FALSE(accepted);
  std::optional<FinishedJob> f;
  ASSERT_TRUE(q_->NextFinished(1, &f).ok());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->id, "j");
  EXPECT_EQ(f->result_json, "{\"ok\":1}");
  // Not acknowledged: a restarted API node gets it again.
  int moved = 0;
  ASSERT_TRUE(q_->RecoverUnacknowledged(&moved).ok());
  EXPECT_EQ(moved, 1);
  std::optional<FinishedJob> g;
  ASSERT_TRUE(q_->NextFinished(1, &g).ok());
  ASSERT_TRUE(g.has_value());
  ASSERT_TRUE(q_->Acknowledge(*g).ok());
  ASSERT_TRUE(q_->NextFinished(0.1, &g).ok());
  EXPECT_FALSE(g.has_value());
}

TEST_F(RedisQueueTest, CancelRemovesQueuedAndFlagsRunning) {
  bool enq, was_queued, was_running;
  ASSERT_TRUE(q_->Enqueue("a", 1, 1, "A", &enq).ok());
  ASSERT_TRUE(q_->Enqueue("b", 1, 1, "B", &enq).ok());
  std::optional<ClaimedJob> j;
  ASSERT_TRUE(q_->Claim("w", 10000, &j).ok());
  ASSERT_EQ(j->id, "a");
  ASSERT_TRUE(q_->Cancel("b", &was_queued, &was_running).ok());
  EXPECT_TRUE(was_queued);
  ASSERT_TRUE(q_->Cancel("a", &was_queued, &was_running).ok());
  EXPECT_TRUE(was_running);
  LeaseState ls;
  ASSERT_TRUE(q_->Heartbeat("a", "w", 10000, &ls).ok());
  EXPECT_EQ(ls, LeaseState::kCancelRequested);
  int64_t queued, leased;
  ASSERT_TRUE(q_->QueueDepth(&queued, &leased).ok());
  EXPECT_EQ(queued, 0);
  EXPECT_EQ(leased, 1);
}

}  // namespace
}  // namespace kgym
