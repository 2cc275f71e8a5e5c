// Small blocking HTTP helper over libcurl shared by the chat client and the KernelGYM client.
#pragma once

#include <string>
#include <vector>

namespace kgym::agent {

struct HttpReply {
  long status = 0;  // HTTP status; 0 when no reply arrived
  std::string body;
  std::string curl_error;  // empty on transport success
  bool timed_out = false;
  double retry_after_s = -1;  // Retry-After header in seconds, -1 when absent
};

// One request. `method` is "GET" or "POST" (POST sends `body` as application/json).
HttpReply HttpRequest(const std::string& method, const std::string& url, const std::string& body,
                      const std::vector<std::string>& headers, double timeout_s, double connect_timeout_s);

// Sleep before retry `attempt` (0-based): min(base*2^attempt, max) scaled by a jitter in [0.5, 1], or the
// server's Retry-After when given (capped at max).
double BackoffSeconds(int attempt, double base_s, double max_s, double retry_after_s);

}  // namespace kgym::agent
