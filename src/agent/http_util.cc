#include "agent/http_util.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>

namespace kgym::agent {

namespace {
std::once_flag g_curl_once;

size_t WriteBody(char* ptr, size_t size, size_t nmemb, void* userdata) {
  static_cast<std::string*>(userdata)->append(ptr, size * nmemb);
  return size * nmemb;
}

size_t ReadHeader(char* buffer, size_t size, size_t nitems, void* userdata) {
  size_t n = size * nitems;
  std::string line(buffer, n);
  auto* reply = static_cast<HttpReply*>(userdata);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("retry-after:", 0) == 0) {
    char* end = nullptr;
    double v = std::strtod(line.c_str() + 12, &end);
    if (end != line.c_str() + 12 && v >= 0) reply->retry_after_s = v;
  }
  return n;
}
}  // namespace

HttpReply HttpRequest(const std::string& method, const std::string& url, const std::string& body,
                      const std::vector<std::string>& headers, double timeout_s, double connect_timeout_s) {
  std::call_once(g_curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpReply reply;
  CURL* curl = curl_easy_init();
  if (!curl) {
    reply.curl_error = "curl_easy_init failed";
    return reply;
  }
  struct curl_slist* hdrs = nullptr;
  for (const auto& h : headers) hdrs = curl_slist_append(hdrs, h.c_str());
  if (method == "POST") hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    reply.curl_error = curl_easy_strerror(rc);
    reply.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(curl);
  return reply;
}

double BackoffSeconds(int attempt, double base_s, double max_s, double retry_after_s) {
  if (retry_after_s >= 0) return std::min(retry_after_s, max_s);
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return std::min(base_s * std::pow(2.0, attempt), max_s) * jitter(rng);
}

}  // namespace kgym::agent
