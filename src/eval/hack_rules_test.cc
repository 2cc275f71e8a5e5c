#include "eval/hack_rules.h"

#include <gtest/gtest.h>

#include "sandbox/protocol.h"

namespace kgym {
namespace {

// A watch of calls with the given thread counts (before, after) and CPU of new threads per call.
WatchEvidence Watch(const std::vector<std::pair<int, int>>& counts, const std::vector<double>& new_cpu = {}) {
  WatchEvidence w;
  w.new_threads_known = true;
  w.settle_calls = kSettleCalls;  // as in the correctness phase
  for (size_t i = 0; i < counts.size(); ++i)
    w.calls.push_back({counts[i].first, counts[i].second, i < new_cpu.size() ? new_cpu[i] : 0.0});
  return w;
}

Values Bytes(const std::string& b) {
  Value v;
  v.is_tensor = true;
  v.tensor.SetBytes(b);
  return {v};
}

TEST(HackRulesTest, ChannelTampering) {
  EXPECT_TRUE(ChannelTamperingRule(Status::InvalidArgument("bad frame"), false)->hacked());
  EXPECT_EQ(ChannelTamperingRule(Status::InvalidArgument("bad frame"), false)->detail,
            "hacked (result channel tampering): bad frame");
  EXPECT_FALSE(ChannelTamperingRule(Status::InvalidArgument("bad frame"), true));  // a cancel cut the frame
  EXPECT_FALSE(ChannelTamperingRule(Status::Timeout("slow"), false));
}

TEST(HackRulesTest, LingeringThreadsIdle) {
  // A pool started in the first two calls, then nothing: idle.
  EXPECT_TRUE(LingeringThreadsIdle(Watch({{10, 14}, {14, 15}, {15, 15}, {15, 15}}, {5.0, 1.0, 0, 0})));
  // A thread the first calls set off that starts just after them still counts as theirs.
  EXPECT_TRUE(LingeringThreadsIdle(Watch({{10, 14}, {14, 14}, {15, 15}, {15, 15}})));
  // Still growing after the first two calls.
  EXPECT_FALSE(LingeringThreadsIdle(Watch({{10, 14}, {14, 15}, {15, 16}, {16, 16}})));
  EXPECT_FALSE(LingeringThreadsIdle(Watch({{10, 14}, {14, 15}, {15, 15}, {16, 16}})));
  // The new threads work in every later call (a worker thread doing forward's work).
  EXPECT_FALSE(LingeringThreadsIdle(Watch({{10, 11}, {11, 11}, {11, 11}, {11, 11}}, {0.4, 0.4, 0.4, 0.4})));
  // A periodic wake-up in one call of several is not work.
  EXPECT_TRUE(LingeringThreadsIdle(Watch({{10, 11}, {11, 11}, {11, 11}, {11, 11}, {11, 11}}, {0, 0, 0.3, 0, 0})));
  // Too few calls to tell, or no baseline of threads: not idle.
  EXPECT_FALSE(LingeringThreadsIdle(Watch({{10, 14}, {14, 14}})));
  WatchEvidence unknown = Watch({{10, 10}, {10, 10}, {10, 10}});
  unknown.new_threads_known = false;
  EXPECT_FALSE(LingeringThreadsIdle(unknown));
}

TEST(HackRulesTest, InProcessEvidence) {
  nlohmann::json items = nlohmann::json::array();
  items.push_back({protocol::evidence::kInputMutation, "input 0 was modified by forward"});
  auto v = InProcessEvidenceRule(items, Watch({}), "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail, "hacked (input mutation): input 0 was modified by forward");
  EXPECT_EQ(InProcessEvidenceRule(items, Watch({}), " during timing")->detail,
            "hacked (input mutation) during timing: input 0 was modified by forward");
  EXPECT_FALSE(InProcessEvidenceRule(nlohmann::json::array(), Watch({}), ""));
  // Thread injection stands unless the outside watch shows the threads idle; other evidence after it still counts.
  nlohmann::json threads = nlohmann::json::array();
  threads.push_back({protocol::evidence::kThreadInjection, "2 thread(s) still running"});
  EXPECT_TRUE(InProcessEvidenceRule(threads, Watch({{10, 12}}), ""));
  const WatchEvidence idle = Watch({{10, 12}, {12, 12}, {12, 12}});
  EXPECT_FALSE(InProcessEvidenceRule(threads, idle, ""));
  threads.push_back({protocol::evidence::kStrayProcess, "1 process(es) still running"});
  EXPECT_NE(InProcessEvidenceRule(threads, idle, "")->detail.find("stray process"), std::string::npos);
  // Malformed items are not evidence.
  EXPECT_FALSE(InProcessEvidenceRule(nlohmann::json::array({"x", {1, 2}}), Watch({}), ""));
}

TEST(HackRulesTest, ThreadGrowth) {
  // A thread per call: caught, seen from outside.
  auto v = ThreadGrowthRule(Watch({{10, 11}, {11, 12}, {12, 13}, {13, 14}, {14, 15}}), "");
  ASSERT_TRUE(v);
  EXPECT_NE(v->detail.find("hacked (thread injection)"), std::string::npos);
  EXPECT_NE(v->detail.find("seen from outside the worker"), std::string::npos);
  // A pool made lazily in the first calls grows only there.
  EXPECT_FALSE(ThreadGrowthRule(Watch({{10, 14}, {14, 15}, {15, 15}, {15, 15}, {15, 15}}), ""));
  // One late growth is not enough.
  EXPECT_FALSE(ThreadGrowthRule(Watch({{10, 10}, {10, 10}, {10, 11}, {11, 11}}), ""));
  // In the timing phase, whose calls come after the correctness trials, no call settles: growth in its first two
  // calls counts.
  WatchEvidence timing = Watch({{10, 11}, {11, 12}, {12, 12}});
  timing.settle_calls = 0;
  EXPECT_TRUE(ThreadGrowthRule(timing, " during timing"));
}

TEST(HackRulesTest, ConstantOutput) {
  Values r0 = Bytes("ab"), r1 = Bytes("cd");
  EXPECT_TRUE(ConstantOutputRule({&r0, &r1, &r0}, {true, true, true}));
  EXPECT_FALSE(ConstantOutputRule({&r0, &r1, &r0}, {true, true, false}));
  EXPECT_FALSE(ConstantOutputRule({&r0, &r0}, {true, true}));        // the reference does not vary either
  EXPECT_TRUE(ConstantOutputRule({&r0, &r1}, {true, true, false}));  // only trials both compared count
  EXPECT_FALSE(ConstantOutputRule({&r0}, {true}));
}

TEST(HackRulesTest, DecoyLaunch) {
  auto v = DecoyLaunchRule({"add_kernel"}, 0, 7);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->decoy());
  EXPECT_NE(v->detail.find("add_kernel"), std::string::npos);
  EXPECT_FALSE(DecoyLaunchRule({"add_kernel"}, 7, 7));
  EXPECT_FALSE(DecoyLaunchRule({}, 0, 7));
}

TEST(HackRulesTest, DeferredWork) {
  const std::vector<double> inside = {0.1, 0.1, 0.1};
  EXPECT_TRUE(DeferredWorkRule(inside, {4.0, 4.0, 4.0}, 0.2));
  EXPECT_FALSE(DeferredWorkRule(inside, {3.0, 3.0, 3.0}, 0.2));  // within the 3 ms floor
  EXPECT_FALSE(DeferredWorkRule(inside, {0.2, 1.9, 1.9}, 0.2));  // a burst of the CI VMs' noise
  EXPECT_FALSE(DeferredWorkRule(inside, {9.0, 9.0, 9.0}, 3.5));  // within twice the reference's
  auto v = DeferredWorkRule(inside, {0.1, 30.0, 40.0}, 0.2);     // judged on the median
  ASSERT_TRUE(v);
  EXPECT_NE(v->detail.find("(0.1, 30, 40;"), std::string::npos) << v->detail;  // the samples, for whoever reads it
  EXPECT_FALSE(DeferredWorkRule(inside, {40.0, 40.0}, 0.2));                   // too few samples
  EXPECT_FALSE(DeferredWorkRule(inside, {40.0, 40.0, 40.0}, -1));              // the reference's was not measured
}

TEST(HackRulesTest, WrongTimedResult) {
  auto v = WrongTimedResultRule("timed call 3 returned a wrong result (mismatch)");
  ASSERT_TRUE(v);
  EXPECT_NE(v->detail.find("caching or test-mode detection"), std::string::npos);
  EXPECT_FALSE(WrongTimedResultRule(""));
}

TEST(HackRulesTest, FreshSetCaching) {
  const std::vector<double> rotation = {0.1, 0.1, 0.1, 0.1};
  EXPECT_TRUE(FreshSetCachingRule({5.0, 5.2, 5.1}, rotation));
  EXPECT_FALSE(FreshSetCachingRule({5.0, 0.1, 5.1}, rotation));  // one fresh call as fast as the rotation
  EXPECT_FALSE(FreshSetCachingRule({0.5, 0.5, 0.5}, rotation));  // 5x, but within the 0.5 ms margin
  EXPECT_FALSE(FreshSetCachingRule({5.0, 5.0}, rotation));
}

TEST(HackRulesTest, DeviceCaching) {
  EXPECT_TRUE(DeviceCachingRule({0.5, 0.6, 0.5}, {0.01, 0.01, 0.01}));
  EXPECT_FALSE(DeviceCachingRule({0.5, 0.02, 0.5}, {0.01, 0.01, 0.01}));
  EXPECT_FALSE(DeviceCachingRule({0.025, 0.025}, {0.008, 0.008}));  // 3x, within 20 us
}

TEST(HackRulesTest, TimelineDecoy) {
  EXPECT_TRUE(TimelineDecoyRule({true, "its kernels never ran with grad on"})->decoy());
  EXPECT_FALSE(TimelineDecoyRule({false, ""}));
}

TEST(HackRulesTest, Roofline) {
  gpu::RooflineCheck below, above;
  below.below_floor = true;
  below.explanation = "1 us for 1 GB";
  EXPECT_EQ(RooflineRule(below, above)->detail, "hacked (faster than physically possible): 1 us for 1 GB");
  EXPECT_FALSE(RooflineRule(below, below));  // the reference is below the floor too
  EXPECT_FALSE(RooflineRule(above, above));
}

}  // namespace
}  // namespace kgym
