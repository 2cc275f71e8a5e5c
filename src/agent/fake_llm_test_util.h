// Test-only: a scripted OpenAI-compatible server on loopback (cpp-httplib). Each POST /v1/chat/completions
// is answered by the script with a status, a body and an optional delay.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace kgym::agent::testing {

struct ScriptedReply {
  ScriptedReply(int s = 200, std::string b = "", double d = 0, std::string ra = "")
      : status(s), body(std::move(b)), delay_s(d), retry_after(std::move(ra)) {}
  int status;
  std::string body;
  double delay_s;
  std::string retry_after;
};

inline std::string ChatBody(const std::string& content, const std::string& finish = "stop") {
  nlohmann::json j = {
      {"id", "cmpl-1"},
      {"object", "chat.completion"},
      {"choices",
       {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", finish}}}},
      {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}, {"total_tokens", 15}}}};
  return j.dump();
}

class ScriptedLlmServer {
 public:
  using Script = std::function<ScriptedReply(int call, const nlohmann::json& request)>;
  explicit ScriptedLlmServer(Script script) : script_(std::move(script)) {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      int call = calls_++;
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(body);
      }
      ScriptedReply r = script_(call, body);
      if (r.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(r.delay_s));
      res.status = r.status;
      if (!r.retry_after.empty()) res.set_header("Retry-After", r.retry_after);
      res.set_content(r.body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ScriptedLlmServer() {
    server_.stop();
    thread_.join();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int calls() const { return calls_.load(); }
  std::vector<nlohmann::json> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  Script script_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::vector<nlohmann::json> requests_;
};

}  // namespace kgym::agent::testing
