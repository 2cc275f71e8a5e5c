#include "agent/chat_client.h"

#include <chrono>
#include <thread>

#include "agent/http_util.h"

namespace kgym::agent {

ChatClient::ChatClient(ChatClientOptions options) : options_(std::move(options)) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

nlohmann::json ChatClient::RequestBody(const std::vector<ChatMessage>& messages, const SamplingParams& p) const {
  nlohmann::json body;
  body["model"] = options_.model;
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = msgs;
  body["temperature"] = p.temperature;
  body["top_p"] = p.top_p;
  if (p.max_tokens > 0) body["max_tokens"] = p.max_tokens;
  if (!p.stop.empty()) body["stop"] = p.stop;
  if (p.n != 1) body["n"] = p.n;
  if (p.logprobs) body["logprobs"] = true;
  if (p.return_token_ids) body["return_token_ids"] = true;
  if (p.seed >= 0) body["seed"] = p.seed;
  if (p.extra.is_object())
    for (auto it = p.extra.begin(); it != p.extra.end(); ++it) body[it.key()] = it.value();
  return body;
}

namespace {
// A JSON list of non-negative integers (null counts as absent: the list stays empty).
bool TokenIds(const nlohmann::json& j, std::vector<int64_t>* out) {
  out->clear();
  if (j.is_null()) return true;
  if (!j.is_array()) return false;
  out->reserve(j.size());
  for (const auto& t : j) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0) return false;
    out->push_back(t.get<int64_t>());
  }
  return true;
}
}  // namespace

Status ParseChatResponse(const std::string& body, ChatResponse* out) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("reply is not a JSON object");
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return Status::InvalidArgument("reply has no choices");
  out->choices.clear();
  out->prompt_token_ids.clear();
  out->policy_version = -1;
  for (const auto& c : j["choices"]) {
    ChatChoice choice;
    if (c.contains("message") && c["message"].is_object()) {
      const auto& m = c["message"];
      if (m.contains("content") && m["content"].is_string()) choice.content = m["content"];
      for (const char* key : {"reasoning_content", "reasoning"})
        if (m.contains(key) && m[key].is_string()) choice.reasoning_content = m[key];
      if (m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty())
        choice.tool_calls = m["tool_calls"];
    } else if (c.contains("text") && c["text"].is_string()) {
      choice.content = c["text"];
    } else {
      return Status::InvalidArgument("reply choice has neither message nor text");
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) choice.finish_reason = c["finish_reason"];
    if (c.contains("logprobs")) choice.logprobs = c["logprobs"];
    if (c.contains("token_ids") && !TokenIds(c["token_ids"], &choice.token_ids))
      return Status::InvalidArgument("reply choice token_ids is not a list of token ids");
    out->choices.push_back(std::move(choice));
  }
  out->usage = j.contains("usage") ? j["usage"] : nlohmann::json();
  if (j.contains("prompt_token_ids") && !TokenIds(j["prompt_token_ids"], &out->prompt_token_ids))
    return Status::InvalidArgument("reply prompt_token_ids is not a list of token ids");
  if (j.contains("policy_version") && j["policy_version"].is_number_integer())
    out->policy_version = j["policy_version"].get<int64_t>();
  out->id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : "";
  return Status::Ok();
}

Status ChatClient::Complete(const std::vector<ChatMessage>& messages, const SamplingParams& params,
                            ChatResponse* out) const {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string url = options_.base_url + "/chat/completions";
  const std::string body = RequestBody(messages, params).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::vector<std::string> headers;
  if (!options_.api_key.empty()) headers.push_back("Authorization: Bearer " + options_.api_key);
  ChatResponse resp;
  Status last;
  bool last_timeout = false;
  for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
    HttpReply r = HttpRequest("POST", url, body, headers, options_.timeout_s, options_.connect_timeout_s);
    resp.attempts = attempt + 1;
    std::string why;
    last_timeout = false;
    if (!r.curl_error.empty()) {
      why = (r.timed_out ? "timeout: " : "transport: ") + r.curl_error;
      last_timeout = r.timed_out;
    } else if (r.status == 429 || r.status >= 500) {
      why = "HTTP " + std::to_string(r.status);
    } else if (r.status != 200) {
      return Status::InvalidArgument("chat completion failed with HTTP " + std::to_string(r.status) + ": " +
                                     r.body.substr(0, 500));
    } else {
      Status s = ParseChatResponse(r.body, &resp);
      if (s.ok()) {
        resp.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        *out = std::move(resp);
        return Status::Ok();
      }
      why = "malformed reply: " + s.message();
    }
    resp.retry_errors.push_back(why);
    last = Status::Unavailable("chat completion failed after " + std::to_string(attempt + 1) +
                               " attempts; last error: " + why);
    if (attempt < options_.max_retries) {
      double wait = BackoffSeconds(attempt, options_.backoff_base_s, options_.backoff_max_s, r.retry_after_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
  }
  resp.latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *out = std::move(resp);
  return last_timeout ? Status::Timeout(last.message()) : last;
}

}  // namespace kgym::agent
