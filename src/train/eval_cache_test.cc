#include "train/eval_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kgym::train {
namespace {

class CountingGym : public agent::EvalBackend {
 public:
  Status Evaluate(const EvalRequest& req, nlohmann::json* result) override {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long enough for the others to arrive
    if (req.kernel_code == "fail") return Status::Unavailable("gym down");
    *result = {{"task_id", req.task_id}, {"speedup", static_cast<double>(calls.load())}, {"metadata", nullptr}};
    return Status::Ok();
  }
  std::string Describe() const override { return "counting"; }
  std::atomic<int> calls{0};
};

EvalRequest Req(const std::string& id, const std::string& code) {
  EvalRequest r;
  r.task_id = id;
  r.reference_code = "ref";
  r.kernel_code = code;
  return r;
}

TEST(SharedEvalBackend, IdenticalCodeIsEvaluatedOnce) {
  CountingGym gym;
  SharedEvalBackend shared(&gym);
  std::vector<nlohmann::json> out(8);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] { ASSERT_TRUE(shared.Evaluate(Req("t" + std::to_string(i), "same"), &out[i]).ok()); });
  for (auto& t : ts) t.join();
  EXPECT_EQ(gym.calls, 1);
  EXPECT_EQ(shared.evaluations(), 1);
  EXPECT_EQ(shared.shared(), 7);
  int answered_by_self = 0;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(out[i]["task_id"], "t" + std::to_string(i));  // each under its own id
    EXPECT_EQ(out[i]["speedup"], 1.0);
    if (!out[i]["metadata"].is_object()) ++answered_by_self;
  }
  EXPECT_EQ(answered_by_self, 1);
}

TEST(SharedEvalBackend, DifferentCodeRerunsAndFailuresAreNotShared) {
  CountingGym gym;
  SharedEvalBackend shared(&gym);
  nlohmann::json r;
  ASSERT_TRUE(shared.Evaluate(Req("a", "x"), &r).ok());
  ASSERT_TRUE(shared.Evaluate(Req("b", "y"), &r).ok());
  ASSERT_TRUE(shared.Evaluate(Req("a-rerun", "x"), &r).ok());  // the anomaly re-run is a second measurement
  EXPECT_EQ(gym.calls, 3);
  EXPECT_FALSE(shared.Evaluate(Req("c", "fail"), &r).ok());
  EXPECT_FALSE(shared.Evaluate(Req("d", "fail"), &r).ok());  // a failure is not remembered: tried again
  EXPECT_EQ(gym.calls, 5);
  ASSERT_TRUE(shared.Evaluate(Req("e", "x"), &r).ok());
  EXPECT_EQ(gym.calls, 5);
  EXPECT_EQ(r["metadata"]["kgym_shared_with"], "a");
  shared.Clear();
  ASSERT_TRUE(shared.Evaluate(Req("f", "x"), &r).ok());
  EXPECT_EQ(gym.calls, 6);
  EXPECT_EQ(shared.evaluations(), 1);
}

}  // namespace
}  // namespace kgym::train
