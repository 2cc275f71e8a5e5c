// Parsing of the tool calls the selection and summary agents emit (research/davinci.md §3), in the three forms
// daVinci accepts, tried in this order:
//   1. Qwen3 XML: <tool_call><function=NAME><parameter=P>V</parameter>...</function></tool_call>; each V is read
//      as JSON, else as a Python literal (single quotes, True/False/None, tuples), else kept as the raw string;
//   2. <tool_call>{"name": ..., "arguments": {...}}</tool_call> ("args" accepted; arguments given as a JSON
//      string are decoded);
//   3. the first fenced ```json block whose object has a "name".
// Malformed text yields no call rather than an error: a scheme whose call cannot be read simply gets no skills.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kgym::skills {

struct ToolCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

// All calls found in `text` by the first form that yields any (so one form is never mixed with another).
std::vector<ToolCall> ParseToolCalls(std::string_view text);

// The first call named `name`, if any.
std::optional<ToolCall> FindToolCall(std::string_view text, std::string_view name);

// A Python literal (what ast.literal_eval accepts for str/int/float/bool/None/list/tuple/dict) as JSON.
std::optional<nlohmann::json> ParsePythonLiteral(std::string_view text);

}  // namespace kgym::skills
