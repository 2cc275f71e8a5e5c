#include "agent/turn_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "agent/fake_llm_test_util.h"

namespace kgym::agent {
namespace {

using testing::ChatBody;
using testing::ScriptedLlmServer;
using testing::ScriptedReply;

// Judges a candidate by a marker in its code, like a gym would by running it.
class MarkerGym : public EvalBackend {
 public:
  Status Evaluate(const EvalRequest& req, nlohmann::json* out) override {
    ++calls;
    const std::string& c = req.kernel_code;
    if (c.find("DOWN") != std::string::npos) return Status::Unavailable("gym down");
    nlohmann::json r = {{"task_id", req.task_id}, {"status", "completed"}, {"compiled", true},
                        {"correctness", false},   {"decoy_kernel", false}, {"speedup", 0.0}};
    auto speed = [&](double s) {
      r["correctness"] = true;
      r["speedup"] = s;
    };
    if (c.find("FAST") != std::string::npos) speed(2.0);
    if (c.find("SLOW") != std::string::npos) speed(0.5);
    if (c.find("HUGE") != std::string::npos) speed(calls == 1 ? 50.0 : 1.5);
    if (c.find("DECOY") != std::string::npos) {
      r["correctness"] = true;
      r["decoy_kernel"] = true;
    }
    *out = r;
    return Status::Ok();
  }
  std::string Describe() const override { return "marker gym"; }
  int calls = 0;
};

nlohmann::json TestReward(const nlohmann::json& r) {
  bool c = r.value("correctness", false) && !r.value("decoy_kernel", false) && r.value("status", "") == "completed";
  double reward = c ? 0.5 + 0.5 * std::min(r.value("speedup", 0.0), 3.0) : 0.0;
  return {{"reward", reward}, {"success", c}};
}

std::string Kernel(const std::string& marker) {
  return "Let me think.\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass  # " + marker + "\n```\n";
}

struct Fixture {
  explicit Fixture(ScriptedLlmServer::Script script) : srv(std::move(script)) {
    ChatClientOptions o;
    o.base_url = srv.base_url();
    o.model = "m";
    o.max_retries = 1;
    o.backoff_base_s = 0.01;
    o.timeout_s = 5;
    llm = std::make_unique<ChatClient>(o);
    EXPECT_TRUE(PromptTemplates::Load("", &templates).ok());
    deps.llm = llm.get();
    deps.eval = &gym;
    deps.reward = TestReward;
    deps.templates = &templates;
    task.id = "level1/1_Add";
    task.name = "1_Add";
    task.level = "1";
    task.reference_code = "import torch\nclass Model(torch.nn.Module):\n    pass\n";
  }
  ScriptedLlmServer srv;
  std::unique_ptr<ChatClient> llm;
  MarkerGym gym;
  PromptTemplates templates;
  TurnLoopDeps deps;
  Task task;
};

TEST(TurnLoopTest, ThreeTurnsWithMalformedFirstResponse) {
  Fixture f([](int call, const nlohmann::json&) {
    if (call == 0) return ScriptedReply{200, ChatBody("I would write a kernel but here is prose.")};
    if (call == 1) return ScriptedReply{200, ChatBody(Kernel("WRONG"))};
    return ScriptedReply{200, ChatBody(Kernel("FAST"))};
  });
  TurnLoopConfig cfg;
  nlohmann::json rec = RunTrajectory(f.task, 0, cfg, f.deps);
  EXPECT_EQ(rec["status"], "done");
  EXPECT_EQ(rec["key"], "level1/1_Add#0");
  ASSERT_EQ(rec["turns"].size(), 3u);
  const auto& t1 = rec["turns"][0];
  EXPECT_EQ(t1["extraction"], "whole");
  EXPECT_NE(t1["preflight_error"].get<std::string>().find("class ModelNew"), std::string::npos);
  EXPECT_EQ(t1["result"]["status"], "failed");
  EXPECT_EQ(t1["reward"], 0.0);
  EXPECT_NE(t1["feedback_message"].get<std::string>().find("Client validation failed"), std::string::npos);
  EXPECT_EQ(rec["turns"][1]["result"]["correctness"], false);
  EXPECT_DOUBLE_EQ(rec["turns"][2]["reward"].get<double>(), 1.5);
  EXPECT_EQ(f.gym.calls, 2);  // the preflight failure never reached the gym
  // History grows by one assistant + one user message per turn.
  auto reqs = f.srv.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0]["messages"].size(), 1u);
  EXPECT_EQ(reqs[2]["messages"].size(), 5u);
  EXPECT_EQ(reqs[2]["messages"][3]["role"], "assistant");
  EXPECT_EQ(reqs[2]["messages"][4]["content"], rec["turns"][1]["feedback_message"]);
  EXPECT_EQ(rec["messages"].size(), 7u);
  PromptTemplates t;
  ASSERT_TRUE(PromptTemplates::Load("", &t).ok());
  EXPECT_EQ(reqs[0]["messages"][0]["content"], RenderFirstTurn(t, f.task.reference_code));
}

TEST(TurnLoopTest, StoredPromptAndRewriterHook) {
  Fixture f([](int, const nlohmann::json&) { return ScriptedReply{200, ChatBody(Kernel("FAST"))}; });
  f.task.prompt = nlohmann::json::array({{{"role", "user"}, {"content", "stored prompt"}}});
  f.deps.first_turn_rewriter = [](const std::string& id, const std::string&, int sample, const std::string& p,
                                  nlohmann::json* note) {
    (*note)["scheme"] = sample;
    return p + " [skills for " + id + "]";
  };
  TurnLoopConfig cfg;
  cfg.turns = 1;
  nlohmann::json rec = RunTrajectory(f.task, 2, cfg, f.deps);
  EXPECT_EQ(f.srv.requests().at(0)["messages"][0]["content"], "stored prompt [skills for level1/1_Add]");
  EXPECT_EQ(rec["first_turn"]["scheme"], 2);
}

TEST(TurnLoopTest, SelectContextTurns) {
  std::vector<double> m = {0, 1, 0.5, 1, 0};
  EXPECT_EQ(SelectContextTurns(m, 2, "best"), (std::vector<size_t>{1, 2}));  // 1.5 first reached at 1
  EXPECT_EQ(SelectContextTurns(m, 2, "last"), (std::vector<size_t>{3, 4}));
  EXPECT_EQ(SelectContextTurns(m, 3, "best"), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(SelectContextTurns({1, 2}, 4, "best"), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(SelectContextTurns(m, 0, "best").empty());
}

TEST(TurnLoopTest, SequentialTestTimeScalingKeepsBestWindow) {
  // Turn rewards: t1 SLOW 0.75, t2 FAST 1.5, t3 WRONG 0, then one new turn per iteration.
  Fixture f([](int call, const nlohmann::json&) {
    const char* markers[] = {"SLOW", "FAST", "WRONG", "FAST", "SLOW"};
    return ScriptedReply{200, ChatBody(Kernel(markers[call % 5]))};
  });
  TurnLoopConfig cfg;
  cfg.turns = 3;
  cfg.iterations = 3;
  cfg.keep_turns = 2;
  EXPECT_EQ(TotalTurns(cfg), 5);
  nlohmann::json rec = RunTrajectory(f.task, 0, cfg, f.deps);
  ASSERT_EQ(rec["turns"].size(), 5u);
  // Iteration 1 keeps the best window of 2 among rewards [0.75, 1.5, 0] = turns 1-2.
  EXPECT_EQ(rec["turns"][3]["iteration"], 1);
  EXPECT_EQ(rec["turns"][3]["context_turns"], nlohmann::json({1, 2}));
  // Iteration 2: rewards [0.75, 1.5, 0, 1.5] -> windows 2.25, 1.5, 1.5 -> turns 1-2 again.
  EXPECT_EQ(rec["turns"][4]["context_turns"], nlohmann::json({1, 2}));
  auto reqs = f.srv.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(reqs[3]["messages"].size(), 5u);  // initial prompt + 2 x (assistant, feedback)
  EXPECT_EQ(reqs[3]["messages"][1]["content"], rec["turns"][0]["response"]);
  EXPECT_EQ(reqs[3]["messages"][4]["content"], rec["turns"][1]["feedback_message"]);
}

TEST(TurnLoopTest, LlmFailureEndsTrajectoryWithAbnormalTurn) {
  Fixture f([](int call, const nlohmann::json&) {
    if (call == 0) return ScriptedReply{200, ChatBody(Kernel("FAST"))};
    return ScriptedReply{503, "busy"};
  });
  nlohmann::json rec = RunTrajectory(f.task, 1, TurnLoopConfig{}, f.deps);
  EXPECT_EQ(rec["status"], "llm_error");
  ASSERT_EQ(rec["turns"].size(), 2u);
  EXPECT_EQ(rec["turns"][1]["abnormal"], true);
  EXPECT_FALSE(rec["turns"][1].contains("result"));
  EXPECT_EQ(rec["turns"][1]["llm_attempts"], 2);
}

TEST(TurnLoopTest, EvalFailureAndSuspiciousSpeedupRerun) {
  Fixture f([](int call, const nlohmann::json&) {
    return ScriptedReply{200, ChatBody(Kernel(call == 0 ? "HUGE" : "DOWN"))};
  });
  nlohmann::json rec = RunTrajectory(f.task, 0, TurnLoopConfig{}, f.deps);
  EXPECT_EQ(rec["status"], "eval_error");
  EXPECT_EQ(rec["turns"][0]["result_first"]["speedup"], 50.0);
  EXPECT_EQ(rec["turns"][0]["result"]["speedup"], 1.5);
  EXPECT_EQ(rec["turns"][1]["abnormal"], true);
}

TEST(TurnLoopTest, EvalTaskIdIsBoundedAndCodeSpecific) {
  std::string long_id(300, 'a');
  std::string a = EvalTaskId("run", long_id, 3, 2, "code A");
  std::string b = EvalTaskId("run", long_id, 3, 2, "code B");
  EXPECT_LE(a.size(), 100u);
  EXPECT_NE(a, b);
  EXPECT_EQ(EvalTaskId("r", "level1/x y", 0, 1, "c").find('/'), std::string::npos);
}

}  // namespace
}  // namespace kgym::agent

namespace kgym::agent {
namespace {

// Records, in order, every LLM call and evaluation of several trajectories.
class EventLog {
 public:
  void Add(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

class LoggingGym : public EvalBackend {
 public:
  explicit LoggingGym(EventLog* log) : log_(log) {}
  Status Evaluate(const EvalRequest& req, nlohmann::json* out) override {
    log_->Add("eval");
    std::this_thread::sleep_for(std::chrono::milliseconds(req.task_id.find("-s0-") != std::string::npos ? 30 : 1));
    *out = {{"task_id", req.task_id}, {"status", "completed"}, {"compiled", true},
            {"correctness", true},    {"decoy_kernel", false}, {"speedup", 1.0}};
    return Status::Ok();
  }
  std::string Describe() const override { return "logging gym"; }

 private:
  EventLog* log_;
};

TEST(TurnLoopTest, LockstepSeparatesGenerationFromEvaluation) {
  EventLog log;
  // Sample 0's LLM calls are slow and its evaluations too: without the gate the phases would interleave.
  ScriptedLlmServer srv([&](int, const nlohmann::json& req) {
    log.Add("llm");
    const bool slow = req["seed"].get<int>() / 1000 == 0;
    return ScriptedReply{200, ChatBody(Kernel("FAST")), slow ? 0.05 : 0.0};
  });
  ChatClientOptions o;
  o.base_url = srv.base_url();
  o.model = "m";
  ChatClient llm(o);
  LoggingGym gym(&log);
  PromptTemplates templates;
  ASSERT_TRUE(PromptTemplates::Load("", &templates).ok());
  Task task;
  task.id = "t";
  task.reference_code = "class Model: pass\n";
  TurnPhaseGate gate(3);
  TurnLoopDeps deps;
  deps.llm = &llm;
  deps.eval = &gym;
  deps.reward = TestReward;
  deps.templates = &templates;
  deps.gate = &gate;
  TurnLoopConfig cfg;
  cfg.turns = 2;
  cfg.seed = 0;
  std::vector<std::thread> ts;
  for (int s = 0; s < 3; ++s)
    ts.emplace_back([&, s] { EXPECT_EQ(RunTrajectory(task, s, cfg, deps)["status"], "done"); });
  for (auto& t : ts) t.join();
  const std::vector<std::string> want = {"llm", "llm", "llm", "eval", "eval", "eval",
                                         "llm", "llm", "llm", "eval", "eval", "eval"};
  EXPECT_EQ(log.events(), want);
}

}  // namespace
}  // namespace kgym::agent
