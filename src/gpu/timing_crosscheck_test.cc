#include "gpu/timing_crosscheck.h"

#include <gtest/gtest.h>

namespace kgym::gpu {
namespace {

TEST(SampleStatsTest, MedianMeanSpread) {
  SampleStats s = Summarize({5, 1, 3});
  EXPECT_EQ(s.n, 3u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, 2);  // sample standard deviation
  EXPECT_DOUBLE_EQ(s.cv, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(Summarize({4, 1, 2, 3}).median, 2.5);
  EXPECT_EQ(Summarize({}).n, 0u);
  EXPECT_DOUBLE_EQ(Summarize({7}).stddev, 0);
}

TEST(TimingCrossCheckTest, AgreeingMeasuresAreNotFlagged) {
  TimingCrossCheck c = CrossCheckTiming({100, 101, 99}, {101, 102, 100}, {103, 104, 102}, 0.05);
  EXPECT_FALSE(c.flagged);
  EXPECT_TRUE(c.explanation.empty());
  EXPECT_DOUBLE_EQ(c.span_median_us, 100);
  EXPECT_NEAR(c.events.rel_diff, 0.01, 1e-12);
  EXPECT_NEAR(c.host.rel_diff, 0.03, 1e-12);
  EXPECT_EQ(c.events.calls_beyond_threshold, 0u);
}

TEST(TimingCrossCheckTest, SideStreamWorkShowsAsEventsBelowTheSpan) {
  // Events on the current stream saw 20 us; the GPU worked 500 us across streams.
  TimingCrossCheck c = CrossCheckTiming({500, 505, 498}, {20, 21, 19}, {}, 0.05);
  EXPECT_TRUE(c.flagged);
  EXPECT_TRUE(c.events.flagged);
  EXPECT_FALSE(c.host.present);
  EXPECT_LT(c.events.rel_diff, -0.9);
  EXPECT_EQ(c.events.calls_beyond_threshold, 3u);
  EXPECT_NE(c.explanation.find("CUDA events measured a median of 20.000 us against a CUPTI span of 500.000 us"),
            std::string::npos)
      << c.explanation;
  EXPECT_NE(c.explanation.find("escaped"), std::string::npos);
  nlohmann::json j = c.ToJson();
  EXPECT_TRUE(j["host"].is_null());
  EXPECT_EQ(j["events"]["flagged"], true);
}

TEST(TimingCrossCheckTest, LaunchOverheadShowsAsHostAboveTheSpan) {
  TimingCrossCheck c = CrossCheckTiming({10, 10, 10}, {}, {40, 41, 39}, 0.5);
  EXPECT_TRUE(c.host.flagged);
  EXPECT_NEAR(c.host.rel_diff, 3.0, 1e-12);
  EXPECT_NE(c.explanation.find("overhead"), std::string::npos) << c.explanation;
}

TEST(TimingCrossCheckTest, OnePerCallOutlierIsCountedButMediansDecide) {
  TimingCrossCheck c = CrossCheckTiming({100, 100, 100, 100, 100}, {100, 100, 300, 100, 100}, {}, 0.05);
  EXPECT_FALSE(c.flagged);
  EXPECT_EQ(c.events.calls_beyond_threshold, 1u);
  EXPECT_DOUBLE_EQ(c.events.max_abs_call_rel_diff, 2.0);
}

TEST(TimingCrossCheckTest, EmptySpansNeverFlagOrDivideByZero) {
  TimingCrossCheck c = CrossCheckTiming({}, {1, 2}, {3}, 0.05);
  EXPECT_FALSE(c.flagged);
  EXPECT_DOUBLE_EQ(c.events.rel_diff, 0);
}

}  // namespace
}  // namespace kgym::gpu
