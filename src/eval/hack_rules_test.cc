#include "eval/hack_rules.h"

#include <gtest/gtest.h>

#include "sandbox/protocol.h"

namespace kgym {
namespace {

// A watch of calls with the given thread counts (before, after) and CPU of new threads per call.
WatchEvidence Watch(const std::vector<std::pair<int, int>>& counts, const std::vector<double>& new_cpu = {}) {
  WatchEvidence w;
  w.new_threads_known = true;
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

TEST(HackRulesTest, InProcessEvidence) {
  nlohmann::json items = nlohmann::json::array();
  items.push_back({protocol::evidence::kInputMutation, "input 0 was modified by forward"});
  items.push_back({protocol::evidence::kStrayProcess, "1 process(es) still running"});
  auto v = InProcessEvidenceRule(items, "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->detail, "hacked (input mutation): input 0 was modified by forward");  // the first item decides
  EXPECT_EQ(InProcessEvidenceRule(items, " during timing")->detail,
            "hacked (input mutation) during timing: input 0 was modified by forward");
  EXPECT_FALSE(InProcessEvidenceRule(nlohmann::json::array(), ""));
  // Malformed items are not evidence.
  EXPECT_FALSE(InProcessEvidenceRule(nlohmann::json::array({"x", {1, 2}}), ""));
}

TEST(HackRulesTest, ThreadGrowth) {
  // A thread per call: caught, seen from outside.
  auto v = ThreadGrowthRule(Watch({{10, 11}, {11, 12}, {12, 13}}), "");
  ASSERT_TRUE(v);
  EXPECT_NE(v->detail.find("hacked (thread injection)"), std::string::npos);
  EXPECT_NE(v->detail.find("seen from outside the worker"), std::string::npos);
  // A pool made lazily on the first call grows the count once.
  EXPECT_FALSE(ThreadGrowthRule(Watch({{10, 14}, {14, 14}, {14, 14}}), ""));
}

TEST(HackRulesTest, ConstantOutput) {
  Values r0 = Bytes("ab"), r1 = Bytes("cd"), c0 = Bytes("xx"), c1 = Bytes("xx"), c2 = Bytes("yy");
  EXPECT_TRUE(ConstantOutputRule({&r0, &r1}, {&c0, &c1}));
  EXPECT_FALSE(ConstantOutputRule({&r0, &r1}, {&c0, &c2}));
  EXPECT_FALSE(ConstantOutputRule({&r0, &r0}, {&c0, &c1}));  // the reference does not vary either
  EXPECT_FALSE(ConstantOutputRule({&r0}, {&c0}));
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
  EXPECT_TRUE(DeferredWorkRule(inside, {3.0, 3.0, 3.0}, 0.2));
  EXPECT_FALSE(DeferredWorkRule(inside, {0.5, 0.5, 0.5}, 0.2));  // within the 0.5 ms floor
  EXPECT_FALSE(DeferredWorkRule(inside, {3.0, 3.0, 3.0}, 1.5));  // within twice the reference's
  EXPECT_FALSE(DeferredWorkRule(inside, {3.0, 3.0}, 0.2));       // too few samples
  EXPECT_FALSE(DeferredWorkRule(inside, {3.0, 3.0, 3.0}, -1));   // the reference's was not measured
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
