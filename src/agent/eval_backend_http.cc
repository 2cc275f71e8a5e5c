#include <algorithm>
#include <chrono>
#include <thread>

#include "agent/eval_backend.h"
#include "agent/http_util.h"
#include "fault/fault_points.h"
#include "request/request_fields.h"

namespace kgym::agent {

nlohmann::json GymPayload(const EvalRequest& req, bool is_valid) {
  nlohmann::json p;
  // What the request asks: the request table's fields the Dr.Kernel reward client sends, by their HTTP names
  // (request/request_fields.h). An empty string that may be empty is KernelGYM's null, or left out where KernelGYM
  // has no such field (size, kgym's task-size hint).
  for (const request::RequestField& f : request::RequestFields()) {
    if (!f.agent_sends) continue;
    nlohmann::json v = request::Get(f, req);
    if (v.is_string() && v.get<std::string>().empty() && f.lo == 0) {
      if (f.kernelgym) p[f.name] = nullptr;
      continue;
    }
    p[f.name] = std::move(v);
  }
  p["reference_code"] = req.reference_code;
  p["kernel_code"] = req.kernel_code;
  p["priority"] = "normal";
  p["is_valid"] = is_valid;
  p["verbose_errors"] = true;
  p["enable_profiling"] = req.enable_profiling;
  p["detect_decoy_kernel"] = true;
  p["kgym_result"] = true;  // a kgym server answers with kgym's verdict and fields; KernelGYM ignores unknown fields
  return p;
}

namespace {
// POST /evaluate. The fault point gym.request (fault/fault_points.h) makes it fail after the gym got it, as a reply
// lost on the way does: the connection reset (reset), HTTP 500 (500), or no answer in time (slow).
HttpReply PostEvaluate(const std::string& url, const std::string& body, double timeout_s) {
  HttpReply r = HttpRequest("POST", url, body, {}, timeout_s, 10);
  if (auto f = fault::Hit("gym.request")) {
    r = HttpReply{};
    if (f->mode == "500") {
      r.status = 500;
      r.body = "{\"detail\": \"Internal Server Error (fault point)\"}";
    } else if (f->mode == "slow") {
      r.curl_error = "Operation timed out after " + std::to_string(static_cast<long>(timeout_s * 1000)) +
                     " milliseconds with 0 bytes received (fault point)";
      r.timed_out = true;
    } else {
      r.curl_error = "Recv failure: Connection reset by peer (fault point)";
    }
  }
  return r;
}

// Whether a reply is worth asking again for: no answer, 429 or 5xx.
bool Transient(const HttpReply& r) { return !r.curl_error.empty() || r.status == 429 || r.status >= 500; }

class HttpGymBackend : public EvalBackend {
 public:
  explicit HttpGymBackend(HttpGymOptions o) : o_(std::move(o)) {
    while (!o_.base_url.empty() && o_.base_url.back() == '/') o_.base_url.pop_back();
  }

  std::string Describe() const override { return "KernelGYM server " + o_.base_url; }

  Status Evaluate(const EvalRequest& req, nlohmann::json* result) override {
    const std::string body = GymPayload(req, o_.is_valid).dump();
    const double timeout = std::max(o_.client_timeout_s, req.timeout_s + 60);
    HttpReply post;
    std::string why;
    bool posted = false;
    const auto t0 = std::chrono::steady_clock::now();
    // Asks again (the same task_id: the gym answers with the one evaluation) while the failures are transient, for
    // max_retries retries and at least retry_window_s.
    const auto again = [&](int attempt) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return attempt < o_.max_retries || spent < o_.retry_window_s;
    };
    for (int attempt = 0;; ++attempt) {
      post = PostEvaluate(o_.base_url + "/evaluate", body, timeout);
      if (post.curl_error.empty() && post.status == 200) {
        posted = true;
        break;
      }
      if (!Transient(post)) {
        // Validation errors are a verdict about the request, reported like the reference client does.
        *result = {{"task_id", req.task_id},
                   {"status", "failed"},
                   {"compiled", false},
                   {"correctness", false},
                   {"decoy_kernel", false},
                   {"speedup", 0.0},
                   {"error_message", "HTTP " + std::to_string(post.status) + ": " + post.body.substr(0, 2000)},
                   {"error_code", "VALIDATION_ERROR"}};
        return Status::Ok();
      }
      why = post.curl_error.empty() ? "HTTP " + std::to_string(post.status) : post.curl_error;
      if (!again(attempt)) break;
      // KernelGYM's client backs off harder on 503.
      double base = post.status == 503 ? std::max(o_.backoff_base_s, 5 * o_.backoff_base_s) : o_.backoff_base_s;
      std::this_thread::sleep_for(
          std::chrono::duration<double>(BackoffSeconds(attempt, base, o_.backoff_max_s, post.retry_after_s)));
    }
    if (!posted) return Status::Unavailable("POST /evaluate to " + o_.base_url + " failed: " + why);
    HttpReply get;
    for (int attempt = 0; attempt <= o_.max_retries; ++attempt) {
      get = HttpRequest("GET", o_.base_url + "/results/" + req.task_id, "", {}, 60, 10);
      if (get.curl_error.empty() && get.status == 200) break;
      if (attempt < o_.max_retries)
        std::this_thread::sleep_for(std::chrono::duration<double>(
            BackoffSeconds(attempt, o_.backoff_base_s, o_.backoff_max_s, get.retry_after_s)));
    }
    const std::string& text = (get.curl_error.empty() && get.status == 200) ? get.body : post.body;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Status::Unavailable("KernelGYM server returned no JSON result for " + req.task_id);
    *result = std::move(j);
    return Status::Ok();
  }

 private:
  HttpGymOptions o_;
};
}  // namespace

std::unique_ptr<EvalBackend> MakeHttpGymBackend(const HttpGymOptions& options) {
  return std::make_unique<HttpGymBackend>(options);
}

}  // namespace kgym::agent
