#include "agent/chat_client.h"

#include <gtest/gtest.h>

#include "agent/fake_llm_test_util.h"

namespace kgym::agent {
namespace {

using testing::ChatBody;
using testing::ScriptedLlmServer;
using testing::ScriptedReply;

ChatClientOptions Fast(const std::string& url) {
  ChatClientOptions o;
  o.base_url = url;
  o.model = "m";
  o.api_key = "sk-test";
  o.timeout_s = 5;
  o.max_retries = 4;
  o.backoff_base_s = 0.01;
  o.backoff_max_s = 0.05;
  return o;
}

TEST(ChatClientTest, RetriesOn429And500ThenSucceeds) {
  ScriptedLlmServer srv([](int call, const nlohmann::json&) {
    if (call == 0) return ScriptedReply{429, "{\"error\":\"slow down\"}", 0, "0"};
    if (call == 1) return ScriptedReply{500, "oops"};
    if (call == 2) return ScriptedReply{200, "{not json"};
    return ScriptedReply{200, ChatBody("hello")};
  });
  ChatClient c(Fast(srv.base_url()));
  ChatResponse r;
  Status s = c.Complete({{"user", "hi"}}, SamplingParams{}, &r);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.attempts, 4);
  ASSERT_EQ(r.retry_errors.size(), 3u);
  EXPECT_EQ(r.retry_errors[0], "HTTP 429");
  EXPECT_EQ(r.retry_errors[1], "HTTP 500");
  EXPECT_NE(r.retry_errors[2].find("malformed"), std::string::npos);
  EXPECT_EQ(r.choices.at(0).content, "hello");
  EXPECT_EQ(r.usage["completion_tokens"], 5);
}

TEST(ChatClientTest, TimeoutIsRetriedAndReportedWhenPersistent) {
  ScriptedLlmServer srv([](int call, const nlohmann::json&) {
    if (call == 0) return ScriptedReply{200, ChatBody("late"), 1.0};
    return ScriptedReply{200, ChatBody("on time")};
  });
  ChatClientOptions o = Fast(srv.base_url());
  o.timeout_s = 0.3;
  ChatClient c(o);
  ChatResponse r;
  ASSERT_TRUE(c.Complete({{"user", "hi"}}, SamplingParams{}, &r).ok());
  EXPECT_EQ(r.choices[0].content, "on time");
  EXPECT_EQ(r.retry_errors.at(0).rfind("timeout", 0), 0u);

  ScriptedLlmServer always_slow([](int, const nlohmann::json&) { return ScriptedReply{200, ChatBody("x"), 0.6}; });
  o.base_url = always_slow.base_url();
  o.max_retries = 1;
  ChatClient c2(o);
  Status s = c2.Complete({{"user", "hi"}}, SamplingParams{}, &r);
  EXPECT_EQ(s.code(), Status::Code::kTimeout);
  EXPECT_EQ(r.attempts, 2);
}

TEST(ChatClientTest, ClientErrorsAreNotRetried) {
  ScriptedLlmServer srv([](int, const nlohmann::json&) { return ScriptedReply{400, "{\"error\":\"bad model\"}"}; });
  ChatClient c(Fast(srv.base_url()));
  ChatResponse r;
  Status s = c.Complete({{"user", "hi"}}, SamplingParams{}, &r);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("bad model"), std::string::npos);
  EXPECT_EQ(srv.calls(), 1);
}

TEST(ChatClientTest, SendsSamplingParametersAndParsesNChoices) {
  ScriptedLlmServer srv([](int, const nlohmann::json& req) {
    nlohmann::json j = {{"choices", nlohmann::json::array()}};
    for (int i = 0; i < req.value("n", 1); ++i)
      j["choices"].push_back({{"message", {{"content", "c" + std::to_string(i)}, {"reasoning_content", "r"}}},
                              {"finish_reason", "length"},
                              {"logprobs", {{"content", {{{"token", "a"}, {"logprob", -0.5}}}}}}});
    return ScriptedReply{200, j.dump()};
  });
  ChatClient c(Fast(srv.base_url()));
  SamplingParams p;
  p.n = 3;
  p.temperature = 0.7;
  p.max_tokens = 128;
  p.stop = {"<|im_end|>"};
  p.logprobs = true;
  p.seed = 7;
  p.extra = {{"top_k", 20}};
  ChatResponse r;
  ASSERT_TRUE(c.Complete({{"system", "s"}, {"user", "u"}}, p, &r).ok());
  ASSERT_EQ(r.choices.size(), 3u);
  EXPECT_EQ(r.choices[2].content, "c2");
  EXPECT_EQ(r.choices[0].reasoning_content, "r");
  EXPECT_EQ(r.choices[0].finish_reason, "length");
  EXPECT_EQ(r.choices[0].logprobs["content"][0]["logprob"], -0.5);
  nlohmann::json sent = srv.requests().at(0);
  EXPECT_EQ(sent["model"], "m");
  EXPECT_EQ(sent["n"], 3);
  EXPECT_EQ(sent["max_tokens"], 128);
  EXPECT_EQ(sent["stop"][0], "<|im_end|>");
  EXPECT_EQ(sent["logprobs"], true);
  EXPECT_EQ(sent["seed"], 7);
  EXPECT_EQ(sent["top_k"], 20);
  EXPECT_EQ(sent["messages"][1]["content"], "u");
}

TEST(ChatClientTest, ParseRejectsReplyWithoutChoices) {
  ChatResponse r;
  EXPECT_FALSE(ParseChatResponse("{\"choices\": []}", &r).ok());
  EXPECT_FALSE(ParseChatResponse("[]", &r).ok());
  EXPECT_TRUE(ParseChatResponse(ChatBody(""), &r).ok());
  EXPECT_EQ(r.choices[0].content, "");
  EXPECT_TRUE(r.choices[0].tool_calls.is_null());
}

TEST(ChatClientTest, ParseKeepsStructuredToolCalls) {
  ChatResponse r;
  ASSERT_TRUE(ParseChatResponse(
                  R"({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", )"
                  R"("type": "function", "function": {"name": "select_skills", "arguments": "{\"think\": \"t\"}"}}]}, )"
                  R"("finish_reason": "tool_calls"}]})",
                  &r)
                  .ok());
  EXPECT_EQ(r.choices[0].content, "");
  ASSERT_TRUE(r.choices[0].tool_calls.is_array());
  EXPECT_EQ(r.choices[0].tool_calls[0]["function"]["name"], "select_skills");
}

}  // namespace
}  // namespace kgym::agent

namespace kgym::agent {
namespace {

TEST(ChatClientTest, ParsesTokenIdsAndPolicyVersion) {
  ChatResponse r;
  ASSERT_TRUE(ParseChatResponse(R"({"choices": [{"message": {"content": "x"}, "token_ids": [5, 7, 2]}],
                                   "prompt_token_ids": [1, 2], "policy_version": 4})",
                                &r)
                  .ok());
  EXPECT_EQ(r.choices[0].token_ids, (std::vector<int64_t>{5, 7, 2}));
  EXPECT_EQ(r.prompt_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.policy_version, 4);
  ASSERT_TRUE(ParseChatResponse(R"({"choices": [{"message": {"content": "x"}, "token_ids": null}]})", &r).ok());
  EXPECT_TRUE(r.choices[0].token_ids.empty());
  EXPECT_EQ(r.policy_version, -1);
  EXPECT_FALSE(ParseChatResponse(R"({"choices": [{"message": {"content": "x"}, "token_ids": [1, "a"]}]})", &r).ok());
  EXPECT_FALSE(ParseChatResponse(R"({"choices": [{"message": {"content": "x"}}], "prompt_token_ids": [-1]})", &r).ok());
  ChatClient c({"http://x/v1", "m"});
  SamplingParams p;
  EXPECT_FALSE(c.RequestBody({{"user", "hi"}}, p).contains("return_token_ids"));
  p.return_token_ids = true;
  EXPECT_EQ(c.RequestBody({{"user", "hi"}}, p)["return_token_ids"], true);
}

}  // namespace
}  // namespace kgym::agent
