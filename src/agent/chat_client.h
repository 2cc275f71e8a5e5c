// ChatClient: an OpenAI-compatible chat-completions client (vLLM, SGLang, llama.cpp server, hosted APIs)
// over libcurl. POST {base_url}/chat/completions with the model, messages and sampling parameters; retries
// with exponential backoff (and Retry-After) on HTTP 429/5xx, timeouts, connection errors and unparsable
// replies; other HTTP errors fail at once.
//
// Thread-safe: Complete() may be called from many threads; each call uses its own curl handle. The caller
// bounds concurrency (the agent runs at most --llm-concurrency calls at once).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace kgym::agent {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct ChatClientOptions {
  std::string base_url;  // e.g. http://127.0.0.1:8000/v1 (".../chat/completions" is appended)
  std::string model;
  std::string api_key;     // sent as "Authorization: Bearer ..." when not empty
  double timeout_s = 600;  // per request
  double connect_timeout_s = 10;
  int max_retries = 4;          // retries after the first attempt
  double backoff_base_s = 1.0;  // delay before retry k (0-based) = min(base * 2^k, max) * jitter
  double backoff_max_s = 30.0;
};

struct SamplingParams {
  double temperature = 1.0;
  double top_p = 0.95;
  int max_tokens = 8192;  // 0 = not sent
  std::vector<std::string> stop;
  int n = 1;
  bool logprobs = false;
  bool return_token_ids = false;  // ask for prompt_token_ids / choices[].token_ids (vLLM >= 0.10.2, kgym's learner)
  int seed = -1;                  // < 0 = not sent
  nlohmann::json extra = nlohmann::json::object();  // merged into the request body (e.g. top_k)
};

struct ChatChoice {
  std::string content;
  std::string reasoning_content;   // vLLM/SGLang reasoning parsers put <think> text here
  std::string finish_reason;       // stop | length | ...
  nlohmann::json logprobs;         // as returned (null when absent)
  nlohmann::json tool_calls;       // message.tool_calls as returned by servers with a tool parser (null when absent)
  std::vector<int64_t> token_ids;  // the sampled ids, when the request set return_token_ids (vLLM's extension)
};

struct ChatResponse {
  std::vector<ChatChoice> choices;
  nlohmann::json usage;  // prompt_tokens, completion_tokens, ... (null when absent)
  std::string id;
  int attempts = 0;                       // HTTP attempts made, including the successful one
  std::vector<std::string> retry_errors;  // why each failed attempt was retried
  double latency_s = 0;                   // wall time of the whole call including retries
  std::vector<int64_t> prompt_token_ids;  // the prompt as the engine tokenized it (return_token_ids)
  int64_t policy_version = -1;            // kgym's learner: the weights' version that sampled the reply (-1 absent)
};

class ChatClient {
 public:
  explicit ChatClient(ChatClientOptions options);

  // Returns the parsed reply, or an error after the retries are spent (Unavailable / Timeout), or at once
  // on a non-retryable HTTP status (InvalidArgument, with the server's message).
  Status Complete(const std::vector<ChatMessage>& messages, const SamplingParams& params, ChatResponse* out) const;

  // The request body Complete() sends (exposed for tests and the run record).
  nlohmann::json RequestBody(const std::vector<ChatMessage>& messages, const SamplingParams& params) const;

  const ChatClientOptions& options() const { return options_; }

 private:
  ChatClientOptions options_;
};

// Parses one chat-completions reply body. Fails (InvalidArgument) when it is not JSON or has no choices.
Status ParseChatResponse(const std::string& body, ChatResponse* out);

}  // namespace kgym::agent
