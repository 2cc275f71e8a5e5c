#include "agent/feedback.h"

namespace kgym::agent {

namespace {
void BoundStrings(nlohmann::json* j, size_t max_chars) {
  if (j->is_string()) {
    const std::string& s = j->get_ref<const std::string&>();
    if (s.size() > max_chars) *j = ElideMiddle(s, max_chars);
  } else if (j->is_object() || j->is_array()) {
    for (auto& v : *j) BoundStrings(&v, max_chars);
  }
}
}  // namespace

std::string ElideMiddle(const std::string& s, size_t max_chars) {
  if (max_chars == 0 || s.size() <= max_chars) return s;
  std::string mark = "\n... [" + std::to_string(s.size()) + " chars, middle omitted] ...\n";
  if (max_chars <= mark.size() + 2) return s.substr(0, max_chars);
  size_t keep = max_chars - mark.size();
  size_t head = keep / 2, tail = keep - head;
  // Do not cut a UTF-8 sequence in two.
  while (head > 0 && (static_cast<unsigned char>(s[head]) & 0xC0) == 0x80) --head;
  size_t tail_start = s.size() - tail;
  while (tail_start < s.size() && (static_cast<unsigned char>(s[tail_start]) & 0xC0) == 0x80) ++tail_start;
  return s.substr(0, head) + mark + s.substr(tail_start);
}

std::string RenderFeedback(const nlohmann::json& result, const nlohmann::json& reward_summary,
                           const FeedbackOptions& opt) {
  nlohmann::json j = result.is_object() ? result : nlohmann::json::object();
  if (reward_summary.is_object())
    for (auto it = reward_summary.begin(); it != reward_summary.end(); ++it) j[it.key()] = it.value();
  // Raw samples are for traceability in the run record, not for the model.
  if (j.contains("timing") && j["timing"].is_object()) {
    for (auto& t : j["timing"])
      if (t.is_object()) t.erase("samples_ms");
  }
  if (j.contains("metadata") && j["metadata"].is_object()) {
    auto& md = j["metadata"];
    if (md.contains("profiling") && md["profiling"].is_object()) {
      auto& prof = md["profiling"];
      if (prof.contains("kernels") && prof["kernels"].is_array() && prof["kernels"].size() > opt.max_profile_kernels) {
        size_t total = prof["kernels"].size();
        nlohmann::json top = nlohmann::json::array();
        for (size_t i = 0; i < opt.max_profile_kernels; ++i) top.push_back(prof["kernels"][i]);
        prof["kernels"] = top;
        prof["kernels_omitted"] = total - opt.max_profile_kernels;
      }
    }
  }
  if (opt.max_string_chars > 0) BoundStrings(&j, opt.max_string_chars);
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return ElideMiddle(text, opt.max_chars);
}

}  // namespace kgym::agent
