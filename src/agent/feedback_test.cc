#include "agent/feedback.h"

#include <gtest/gtest.h>

namespace kgym::agent {
namespace {

TEST(FeedbackTest, MergesRewardAndDropsSamples) {
  nlohmann::json result = {{"status", "completed"},
                           {"speedup", 1.25},
                           {"timing", {{"kernel", {{"median_ms", 2.0}, {"samples_ms", {1.0, 2.0, 3.0}}}}}}};
  std::string f = RenderFeedback(result, {{"reward", 1.125}, {"success", true}});
  nlohmann::json back = nlohmann::json::parse(f);
  EXPECT_DOUBLE_EQ(back["reward"].get<double>(), 1.125);
  EXPECT_DOUBLE_EQ(back["speedup"].get<double>(), 1.25);
  EXPECT_FALSE(back["timing"]["kernel"].contains("samples_ms"));
  EXPECT_EQ(back["timing"]["kernel"]["median_ms"], 2.0);
  EXPECT_NE(f.find("\n  \"reward\": 1.125"), std::string::npos);  // indent 2, like json.dumps(indent=2)
}

TEST(FeedbackTest, BoundsLongTracebacksAndTotal) {
  std::string tb = "Traceback (most recent call last):\n" + std::string(10000, 'x') + "\nValueError: boom";
  nlohmann::json result = {{"metadata", {{"runtime_error", tb}}}};
  FeedbackOptions opt;
  opt.max_string_chars = 500;
  std::string f = RenderFeedback(result, nlohmann::json::object(), opt);
  nlohmann::json back = nlohmann::json::parse(f);
  std::string kept = back["metadata"]["runtime_error"];
  EXPECT_LE(kept.size(), 500u);
  EXPECT_EQ(kept.rfind("Traceback", 0), 0u);
  EXPECT_NE(kept.find("ValueError: boom"), std::string::npos);  // the tail survives
  opt.max_string_chars = 0;
  opt.max_chars = 300;
  EXPECT_LE(RenderFeedback(result, nlohmann::json::object(), opt).size(), 300u);
}

TEST(FeedbackTest, ProfileKeepsTopKernels) {
  nlohmann::json kernels = nlohmann::json::array();
  for (int i = 0; i < 30; ++i) kernels.push_back({{"name", "k" + std::to_string(i)}});
  nlohmann::json result = {{"metadata", {{"profiling", {{"kernels", kernels}}}}}};
  nlohmann::json back = nlohmann::json::parse(RenderFeedback(result, {}));
  EXPECT_EQ(back["metadata"]["profiling"]["kernels"].size(), 10u);
  EXPECT_EQ(back["metadata"]["profiling"]["kernels_omitted"], 20);
  EXPECT_EQ(back["metadata"]["profiling"]["kernels"][0]["name"], "k0");
}

TEST(FeedbackTest, ElideMiddleKeepsUtf8Whole) {
  std::string s;
  for (int i = 0; i < 200; ++i) s += "\xc3\xa9";  // é
  std::string e = ElideMiddle(s, 100);
  EXPECT_LE(e.size(), 100u);
  EXPECT_FALSE(nlohmann::json(e).dump().empty());  // valid UTF-8 or dump would throw
}

}  // namespace
}  // namespace kgym::agent
