// Server feedback shown to the model after each turn (research/drkernel.md §4.2): the evaluation result
// merged with the reward summary, rendered as indented JSON. Dr.Kernel sends the whole payload untruncated;
// kgym bounds it: raw timing samples are dropped, long strings (tracebacks) keep their head and tail, the
// profile keeps its top kernels, and the text never exceeds `max_chars` (middle elided).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kgym::agent {

struct FeedbackOptions {
  size_t max_chars = 8000;         // 0 = unbounded
  size_t max_string_chars = 2000;  // per string field
  size_t max_profile_kernels = 10;
};

// `result` is an evaluation result (KernelGYM schema plus kgym fields); `reward_summary` holds reward,
// score, success and the coverage numbers; both are merged (summary keys win) before rendering.
std::string RenderFeedback(const nlohmann::json& result, const nlohmann::json& reward_summary,
                           const FeedbackOptions& opt = {});

// Keeps the first and last parts of `s` so that it fits in `max_chars`, marking what was cut.
std::string ElideMiddle(const std::string& s, size_t max_chars);

}  // namespace kgym::agent
